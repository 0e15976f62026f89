-- Hourly sales per city, enriched with the city table: for every hour, exactly one row per city,
-- cities that sold nothing that hour included (total_sales and sales NULL).
-- Paths come from the environment (defaults: the generator's output under data/).
CREATE STREAM sales (
    sale_id BIGINT,
    city VARCHAR(32),
    amount DECIMAL(12, 2),
    sale_time TIMESTAMP
) WITH (connector = 'files', format = 'json', path = '${SALES_PATH:-data/hourly_city_sales/sales}',
        rowtime = 'sale_time', lateness = '2 MINUTES');

-- the latest snapshot of the city table (city_info_source.sql), read when the query starts;
-- lookup_snapshot_refresh exports a new version and restarts the query on it
CREATE TABLE city_info (
    city VARCHAR(32) PRIMARY KEY,
    region VARCHAR(32),
    store_name VARCHAR(64)
) WITH (connector = 's3', path = '${CITY_INFO_SNAPSHOTS_PATH:-data/hourly_city_sales/snapshots/city_info}');

-- raw sales -> hourly totals per city (a row per city and hour, emitted when the hour closes)
CREATE VIEW city_sales AS
    SELECT STREAM city, SUM(amount) AS total_sales, COUNT(*) AS sales
    FROM sales
    GROUP BY FLOOR(ROWTIME TO HOUR), city;

-- the enrichment output: a Delta table partitioned by hour, each hour marked complete once closed
CREATE SINK hourly_city_sales_output WITH (
    connector = 's3', path = '${OUTPUT_PATH:-data/hourly_city_sales/output}',
    format = 'delta', partitioned_by = 'hour');

-- s-Server's enrichment join: the hour bucket keeps every city row per hour
INSERT INTO hourly_city_sales_output
SELECT STREAM FLOOR(ROWTIME TO HOUR) AS sales_hour, ci.city, ci.region, ci.store_name,
       cs.total_sales, cs.sales
FROM city_sales OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW) AS cs
RIGHT OUTER JOIN city_info AS ci ON cs.city = ci.city;
