DROP TABLE tokens;
DROP TABLE users;
