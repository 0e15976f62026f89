-- The hourly city sales app written as a Kinesis Data Analytics application: the same result
-- as ../hourly_city_sales/query.sql, from sales in a Kinesis data stream. As in KDA, the SQL
-- does not declare its input (SOURCE_SQL_STREAM_001) or its reference table (city_info):
-- app.toml does ([inputs.*], [reference.*]; docs/applications.md).

-- hourly totals per city, pumped into an in-application stream
CREATE OR REPLACE STREAM "CITY_SALES" (city VARCHAR(32), total_sales DECIMAL(12, 2), sales BIGINT);
CREATE OR REPLACE PUMP "CITY_SALES_PUMP" AS INSERT INTO "CITY_SALES"
    SELECT STREAM city, SUM(amount), COUNT(*)
    FROM "SOURCE_SQL_STREAM_001"
    GROUP BY FLOOR(ROWTIME TO HOUR), city;

-- the enrichment output: a Delta table partitioned by hour, each hour marked complete once closed
CREATE SINK hourly_city_sales_kda_output WITH (
    connector = 's3', path = '${KDA_OUTPUT_PATH:-data/hourly_city_sales_kda/output}',
    format = 'delta', partitioned_by = 'hour');

-- every city every hour, with its totals or NULL (s-Server's hour-bucketed RIGHT OUTER JOIN)
CREATE OR REPLACE PUMP "OUTPUT_PUMP" AS INSERT INTO hourly_city_sales_kda_output
    SELECT STREAM FLOOR(ROWTIME TO HOUR) AS sales_hour, ci.city, ci.region, ci.store_name,
           cs.total_sales, cs.sales
    FROM "CITY_SALES" OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW) AS cs
    RIGHT OUTER JOIN city_info AS ci ON cs.city = ci.city;
