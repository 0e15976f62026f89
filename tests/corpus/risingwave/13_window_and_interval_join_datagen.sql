-- source: risingwavelabs/risingwave-docs:processing/sql/joins.mdx, "Windows joins" and "Interval joins" sections (https://docs.risingwave.com/processing/sql/joins), commit 747f1f6bcf3160e0c709631556777cbe96cf18cb
-- modeled on: two datagen sources with WATERMARK FOR ts AS ts - INTERVAL '20' SECOND and a WITH clause but no FORMAT; a window join FROM TUMBLE(a, ts, interval '1' MINUTE) JOIN TUMBLE(b, ...) ON key and window_start (unaliased TUMBLEs qualified by source name), and an interval join ON key and a.ts between b.ts and b.ts + INTERVAL '1' MINUTE
-- dialect: risingwave
-- check: ok
CREATE SOURCE meter_a (
 meter int,
 reading int,
 ts TIMESTAMP,
 WATERMARK FOR ts AS ts - INTERVAL '20' SECOND
) WITH (connector = 'datagen');

CREATE SOURCE meter_b (
 meter int,
 reading int,
 ts TIMESTAMP,
 WATERMARK FOR ts AS ts - INTERVAL '20' SECOND
) WITH (connector = 'datagen');

CREATE MATERIALIZED VIEW meter_window_join AS
SELECT meter_a.meter AS meter_a_id,
       meter_a.reading AS reading_a,
       meter_b.meter AS meter_b_id,
       meter_b.reading AS reading_b
FROM TUMBLE(meter_a, ts, interval '1' MINUTE)
JOIN TUMBLE(meter_b, ts, interval '1' MINUTE)
ON meter_a.meter = meter_b.meter and meter_a.window_start = meter_b.window_start;

CREATE MATERIALIZED VIEW meter_interval_join AS
SELECT meter_a.meter AS meter_a_id,
       meter_a.reading AS reading_a,
       meter_b.meter AS meter_b_id,
       meter_b.reading AS reading_b
FROM meter_a JOIN meter_b
ON meter_a.meter = meter_b.meter and meter_a.ts between meter_b.ts and meter_b.ts + INTERVAL '1' MINUTE;
