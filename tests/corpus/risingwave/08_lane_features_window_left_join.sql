-- source: risingwavelabs/awesome-stream-processing:03-solution-demos/traffic_prediction/sql/traffic_feature.sql, commit 9857e1f7f3b49a05dbe54412522057a6d40323a9
-- modeled on: DROP ... IF EXISTS at the top, two Kafka JSON sources whose column lists end in a trailing comma, SET TIME ZONE between DDL, a CTE of TUMBLE counts LEFT JOINed to a TUMBLE-averaged subquery on key + window_start, an MV filtered by NOW() (temporal filter), and a Kafka-backed CREATE TABLE with BIGINT PRIMARY KEY and its NOW() filter MV
-- dialect: risingwave
-- check: ok
DROP MATERIALIZED VIEW IF EXISTS lane_features_recent;
DROP MATERIALIZED VIEW IF EXISTS lane_features;

DROP SOURCE IF EXISTS plate_reader_stream;
DROP SOURCE IF EXISTS loop_detector_stream;

DROP MATERIALIZED VIEW IF EXISTS volume_history;
DROP TABLE IF EXISTS lane_volume;

-- Plate reader stream
CREATE SOURCE plate_reader_stream (
    timestamp TIMESTAMP,
    reader_id VARCHAR,
    lane_id VARCHAR,
    vehicle_class VARCHAR,
    plate VARCHAR,
    speed_kph FLOAT,
) WITH (
    connector='kafka',
    topic='plate-reads',
    properties.bootstrap.server='localhost:9092'
) FORMAT PLAIN ENCODE JSON;

--loop detector stream
CREATE SOURCE loop_detector_stream (
    entered_at TIMESTAMP,
    left_at TIMESTAMP,
    detector_id VARCHAR,
    lane_id VARCHAR,
    speed_kph FLOAT,
) WITH (
    connector='kafka',
    topic='loop-detections',
    properties.bootstrap.server='localhost:9092'
) FORMAT PLAIN ENCODE JSON;

-- Session time zone
SET TIME ZONE 'Europe/Oslo';

-- Per-minute lane features
CREATE MATERIALIZED VIEW lane_features AS
WITH cnt AS (
    SELECT
        lane_id,
        window_start,
        COUNT(*) AS vehicles
    FROM TUMBLE(loop_detector_stream,
                entered_at,
                INTERVAL '1 minute'
         )
    GROUP BY lane_id, window_start
)
SELECT cnt.lane_id AS lane_id, cnt.window_start AS window_start, cnt.vehicles AS vehicles, spd.mean_speed_kph AS mean_speed_kph
FROM cnt
    left join (
        SELECT
            lane_id,
            window_start,
            AVG(speed_kph) AS mean_speed_kph
        FROM TUMBLE(plate_reader_stream,
                    timestamp,
                    INTERVAL '1 minute'
             )
        GROUP BY lane_id, window_start
    ) spd
ON cnt.lane_id = spd.lane_id and cnt.window_start = spd.window_start;

CREATE MATERIALIZED VIEW lane_features_recent AS
SELECT *
FROM lane_features
WHERE window_start <= NOW() - INTERVAL '1 minute' AND window_start >= NOW() - INTERVAL '6 minutes';

CREATE TABLE lane_volume (
    id BIGINT PRIMARY KEY,
    lane_id VARCHAR,
    observed_at TIMESTAMP,
    mean_speed_kph FLOAT,
    volume FLOAT,
    forecast_next_minute FLOAT
) WITH (
    connector='kafka',
    topic='lane-volume',
    properties.bootstrap.server='localhost:9092'
) FORMAT PLAIN ENCODE JSON;

CREATE MATERIALIZED VIEW volume_history AS
SELECT lane_id, observed_at, mean_speed_kph, volume, forecast_next_minute
FROM lane_volume
WHERE observed_at >= NOW() - INTERVAL '3 hours';
