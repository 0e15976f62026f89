-- source: awsdocs/amazon-kinesis-data-analytics-developer-guide:doc_source/examples-migrating-to-kda-studio.md, commit d32ce9803b3391f4c548c0c9e374834f97247326 (2023-06-15) ("Migrating to Kinesis Data Analytics for Apache Flink: Examples", section "Joins", SQL-based application side)
-- modeled on: the same reference-data LEFT JOIN as reformatted in the migration guide: "CREATE" and "OR REPLACE" on separate lines, STREAM keyword on the line of the first column, and the published typo that glues the last column to FROM ("priceFROM"), kept as published
-- dialect: kda
-- check: 05_migration_join_glued_from.sql:22:7: error: a query needs a FROM clause
-- fair rejection: the program is broken as published: the migration guide glues the last select column to FROM ("priceFROM"), so the query has no FROM clause
-- config (KDA's input configuration, not part of the program):
CREATE STREAM "SOURCE_SQL_STREAM_001" ("CURRENCY_CODE" VARCHAR(3), "MARKET" VARCHAR(12), "DELTA" DOUBLE, "RATE" DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/source');
CREATE TABLE "CurrencyName" ("Code" VARCHAR(3) PRIMARY KEY, "Currency" VARCHAR(20)) WITH (connector = 'files', format = 'csv', path = '/data/currencies');
-- program:
CREATE 
OR REPLACE STREAM "DESTINATION_SQL_STREAM" (
   currency_code VARCHAR(3),
   "Currency" varchar(20),
   market VARCHAR(12),
   delta DOUBLE,
   rate DOUBLE);
CREATE 
OR REPLACE PUMP "STREAM_PUMP" AS 
INSERT INTO
   "DESTINATION_SQL_STREAM"
   SELECT
      STREAM currency_code,
      "k"."Currency",
      market,
      delta,
      rateFROM "SOURCE_SQL_STREAM_001" 
      LEFT JOIN
         "CurrencyName" as "k"
         ON "SOURCE_SQL_STREAM_001".currency_code = "k"."Code";
