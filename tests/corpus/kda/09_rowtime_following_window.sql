-- source: https://docs.aws.amazon.com/kinesisanalytics/latest/sqlref/sql-reference-rowtime.html (Amazon Kinesis Data Analytics SQL Reference, "ROWTIME", section "ROWTIME system column"), page as stored in the search index
-- modeled on: a bare SELECT STREAM that outputs both inputs' system ROWTIME columns (alias.ROWTIME) and the join's own ROWTIME, the right side windowed with RANGE INTERVAL ... FOLLOWING; unquoted names, no final semicolon
-- dialect: kda
-- check: 09_rowtime_following_window.sql:15:39: error: FOLLOWING is not supported in a join window
-- fair rejection: a FOLLOWING join window makes a row present before its own rowtime, so its results would leave behind the join clock, out of rowtime order; refused by decision (docs/semantics-decisions.md)
-- config (the example's streams, which the source does not declare):
CREATE STREAM Visits (visitId INTEGER, pageId INTEGER) WITH (connector = 'files', format = 'json', path = '/data/visits');
CREATE STREAM Purchases (purchaseId INTEGER, visitId INTEGER) WITH (connector = 'files', format = 'json', path = '/data/purchases');
-- program:
SELECT STREAM
  v.ROWTIME AS visitRowtime,
  p.ROWTIME AS purchaseRowtime,
  ROWTIME AS joinRowtime
FROM Visits AS v
  JOIN Purchases OVER (RANGE INTERVAL '30' MINUTE FOLLOWING) AS p
  ON v.visitId = p.visitId
