CREATE TABLE parent (id serial PRIMARY KEY, v text);
CREATE TABLE child (id serial PRIMARY KEY, parent_id integer REFERENCES parent, v text);
CREATE TABLE solo (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
CREATE TABLE other (id integer PRIMARY KEY);
CREATE TABLE measurements (at date NOT NULL, v integer, PRIMARY KEY (at, v)) PARTITION BY RANGE (at);
CREATE TABLE measurements_2020 PARTITION OF measurements FOR VALUES FROM ('2020-01-01') TO ('2021-01-01');
CREATE TABLE measurements_2021 PARTITION OF measurements FOR VALUES FROM ('2021-01-01') TO ('2022-01-01');
