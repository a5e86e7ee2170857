DROP TABLE articles;
