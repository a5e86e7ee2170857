DROP TABLE versioned_notes;
