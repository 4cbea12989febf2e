-- Inheritance parents with children: a change to a parent's row must not
-- reach its children's rows, which a plain UPDATE or DELETE of the parent
-- (without ONLY) also scans. Each child is a table of its own in the
-- stream; the same keys live in parent and children.
CREATE TABLE city (id integer PRIMARY KEY, name text);
CREATE TABLE capital (state text) INHERITS (city);
ALTER TABLE capital ADD PRIMARY KEY (id);
CREATE TABLE place (name text, pop integer);
ALTER TABLE place REPLICA IDENTITY FULL;
CREATE TABLE town (mayor text) INHERITS (place);
ALTER TABLE town REPLICA IDENTITY FULL;
