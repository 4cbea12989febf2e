-- Large values stored out of line (TOAST) arrive as "unchanged" when an
-- UPDATE does not touch them; the target must keep its own copy.
CREATE TABLE docs (id integer PRIMARY KEY, title text, body text, blob bytea, meta jsonb);
ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE TABLE docs_full (id integer, title text, body text);
ALTER TABLE docs_full REPLICA IDENTITY FULL;
