DROP TABLE comments;
DROP TABLE tags;
DROP TABLE notes;
