-- source: https://docs.lenses.io/4.1/sql/streaming/ (Lenses 4.1 docs, "What queries look like", second query; same program in docs.legacy.lenses.io/5.5/lenses-sql/streaming)
-- modeled on: docs example enriching merchants with country info: four SET lines, `WITH x AS (SELECT STREAM * FROM topic);` twice, a stream-stream JOIN ON a nested value field equal to the other side's key (`m.address.country = c._key`) WITHIN 1h, nested field in the projection, re-keying (`l_key AS _key`), then two INSERT INTO statements (SELECT STREAM * and SELECT TABLE COUNT(*) ... GROUP BY)
-- dialect: lenses
-- check: ok
-- topics (declared in Kafka, not in the program):
CREATE STREAM regions (_key VARCHAR, currency VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/regions');
CREATE STREAM sellers (_key VARCHAR, given_name VARCHAR, family_name VARCHAR, location STRUCT<region VARCHAR, city VARCHAR>, channel VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/sellers');
-- program:
SET defaults.topic.autocreate=true;
SET commit.interval.ms='1000';
SET enable.auto.commit=false;
SET auto.offset.reset='earliest';

WITH regionsStream AS (
  SELECT STREAM *
  FROM regions
);

WITH sellersStream AS (
  SELECT STREAM *
  FROM sellers
);

WITH sellersWithRegionInfoStream AS (
  SELECT STREAM
    s._key AS l_key
    , CONCAT(family_name, ', ', given_name) AS fullname
    , location.region
    , currency
    , channel
  FROM sellersStream AS s JOIN regionsStream AS r
        ON s.location.region = r._key
  WITHIN 1h
);

WITH sellersCorrectKey AS(
  SELECT STREAM
    l_key AS _key
    , fullname
    , region
    , currency
    , channel
  FROM sellersWithRegionInfoStream
);

INSERT INTO currentSellers
SELECT STREAM *
FROM sellersCorrectKey;

INSERT INTO sellersPerChannel
SELECT TABLE
  COUNT(*) AS sellers
FROM sellersCorrectKey
GROUP BY channel;
