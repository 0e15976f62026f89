-- source: https://docs.legacy.lenses.io/5.0/sql/snapshot (Lenses 5.0 docs, "Snapshot mode", facets)
-- modeled on: snapshot query selecting a value field through the `_value` facet with a table qualifier (`users._value.field`) from two topics joined without ON (so on `_key`)
-- dialect: lenses
-- check: ok
-- topics (declared in Kafka, not in the program):
CREATE STREAM members (_key VARCHAR, nickname VARCHAR, joined_on VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/members');
CREATE STREAM rentals (_key VARCHAR, title VARCHAR, days INT) WITH (connector = 'files', format = 'json', path = '/data/rentals');
-- program:
SELECT 
 members._value.nickname
FROM members JOIN rentals
