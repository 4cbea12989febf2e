CREATE TABLE acct (id integer PRIMARY KEY, balance numeric NOT NULL);
CREATE TABLE log (id serial PRIMARY KEY, note text);
