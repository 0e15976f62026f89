-- source: https://docs.lenses.io/5.4/lenses-sql/tutorials/streaming-tutorials/stream-analytics/ (Lenses 5.4 docs, streaming tutorial "stream analytics")
-- modeled on: tutorial aggregating payments of blocked cards: two SET lines, `WITH t AS (SELECT TABLE * FROM topic WHERE ...)`, `WITH stream AS (SELECT STREAM ... FROM topic AS p INNER JOIN t AS c ON p._key = c._key WHERE c.flag = true)` (a view literally named `stream`), then INSERT INTO ... SELECT STREAM sum/count FROM stream WINDOW BY TUMBLE 5s GROUP BY, no final semicolon
-- dialect: lenses
-- check: ok
-- topics (declared in Kafka, not in the program):
CREATE STREAM example_account_data (_key VARCHAR, region VARCHAR, holder VARCHAR, frozen BOOLEAN) WITH (connector = 'files', format = 'json', path = '/data/account-data');
CREATE STREAM example_transfers (_key VARCHAR, region VARCHAR, amount DOUBLE, merchant VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/transfers');
-- program:
SET defaults.topic.autocreate=true;
SET commit.interval.ms='10000';

WITH tableAccounts AS (
  SELECT TABLE *
  FROM example_account_data
  WHERE region = 'EMEA'
);

WITH stream AS (
  SELECT STREAM t.region, t.amount
  FROM example_transfers AS t
  INNER JOIN tableAccounts AS a ON t._key = a._key
  WHERE a.frozen = true
);

INSERT INTO example_join
SELECT STREAM
  region AS region
  , sum(amount) AS total
  , count(*) AS usage
FROM stream
WINDOW BY TUMBLE 10s
GROUP BY region
