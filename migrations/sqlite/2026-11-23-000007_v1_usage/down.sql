DROP TABLE v1_usage;
