-- source: risingwavelabs/awesome-stream-processing:03-solution-demos/shipment_tracking/sql/rw.sql, commit 9857e1f7f3b49a05dbe54412522057a6d40323a9
-- modeled on: SET TIME ZONE, DROP SCHEMA IF EXISTS ... CASCADE + CREATE SCHEMA, schema-qualified Kafka-backed CREATE TABLEs (FORMAT PLAIN ENCODE JSON), typed MVs with ::TEXT/CAST(FLOOR(..) AS BIGINT) grid keys, latest-row MVs via row_number() OVER (PARTITION BY .. ORDER BY .. DESC) ... WHERE rn = 1, and a chained-CTE MV whose first CTE is JOIN + LEFT JOIN over those MVs
-- dialect: risingwave
-- check: ok
SET TIME ZONE 'Asia/Tokyo';

DROP SCHEMA IF EXISTS courier CASCADE;
CREATE SCHEMA courier;


-- 1) Position stream (JSON)
CREATE TABLE courier.position_raw (
    seen_at TIMESTAMPTZ,
    van_id VARCHAR,
    lat DOUBLE PRECISION,
    lon DOUBLE PRECISION,
    kmh DOUBLE PRECISION
) WITH (
    connector = 'kafka',
    topic = 'van_positions',
    properties.bootstrap.server = '127.0.0.1:9092',
    scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE JSON;

-- 2) Road condition stream (JSON)
CREATE TABLE courier.road_raw (
    seen_at TIMESTAMPTZ,
    zone_id VARCHAR,
    south DOUBLE PRECISION,
    west DOUBLE PRECISION,
    north DOUBLE PRECISION,
    east DOUBLE PRECISION,
    jam_factor DOUBLE PRECISION,
    road_kmh DOUBLE PRECISION
) WITH (
    connector = 'kafka',
    topic = 'road_conditions',
    properties.bootstrap.server = '127.0.0.1:9092',
    scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE JSON;

-- 3) Delivery updates stream (JSON)
CREATE TABLE courier.delivery_updates_raw (
    delivery_id VARCHAR,
    van_id VARCHAR,
    drop_lat DOUBLE PRECISION,
    drop_lon DOUBLE PRECISION,
    due_at TIMESTAMPTZ,
    state VARCHAR,
    changed_at TIMESTAMPTZ
) WITH (
    connector = 'kafka',
    topic = 'delivery_updates',
    properties.bootstrap.server = '127.0.0.1:9092',
    scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE JSON;


-- Position events (typed)
CREATE MATERIALIZED VIEW courier.positions AS
SELECT
    seen_at,
    van_id,
    lat,
    lon,
    kmh,
    (
      CAST(FLOOR(lat / 0.005) AS BIGINT)::TEXT
      || '_' ||
      CAST(FLOOR(lon / 0.005) AS BIGINT)::TEXT
    ) AS cell_id
FROM courier.position_raw;

-- Road events (typed)
CREATE MATERIALIZED VIEW courier.road_events AS
SELECT
    seen_at,
    zone_id,
    south,
    west,
    north,
    east,
    jam_factor,
    road_kmh,
    (
      CAST(FLOOR(((south + north) / 2) / 0.005) AS BIGINT)::TEXT
      || '_' ||
      CAST(FLOOR(((west + east) / 2) / 0.005) AS BIGINT)::TEXT
    ) AS cell_id
FROM courier.road_raw;

-- Delivery update events (typed)
CREATE MATERIALIZED VIEW courier.delivery_updates AS
SELECT
    delivery_id,
    van_id,
    drop_lat,
    drop_lon,
    due_at,
    state,
    changed_at
FROM courier.delivery_updates_raw;

-- Current delivery state (one row per delivery_id)
CREATE MATERIALIZED VIEW courier.deliveries AS
SELECT
    delivery_id,
    van_id,
    drop_lat,
    drop_lon,
    due_at,
    state,
    changed_at
FROM (
    SELECT *, row_number() OVER (PARTITION BY delivery_id ORDER BY changed_at DESC) AS rn
    FROM courier.delivery_updates
) t
WHERE rn = 1;

CREATE MATERIALIZED VIEW courier.van_latest AS
SELECT
    van_id,
    seen_at AS position_ts,
    lat,
    lon,
    kmh,
    cell_id
FROM (
    SELECT *, row_number() OVER (PARTITION BY van_id ORDER BY seen_at DESC) AS rn
    FROM courier.positions
) t
WHERE rn = 1;

CREATE MATERIALIZED VIEW courier.road_latest AS
SELECT
    cell_id,
    zone_id,
    seen_at AS road_ts,
    south, west, north, east,
    jam_factor,
    road_kmh
FROM (
    SELECT *, row_number() OVER (PARTITION BY cell_id ORDER BY seen_at DESC) AS rn
    FROM courier.road_events
) t
WHERE rn = 1;



CREATE MATERIALIZED VIEW courier.delivery_eta_live AS
WITH joined AS (
    SELECT
        d.delivery_id,
        d.van_id,
        d.state,
        d.drop_lat,
        d.drop_lon,
        d.due_at,
        d.changed_at,

        v.lat AS van_lat,
        v.lon AS van_lon,
        v.kmh AS van_kmh,
        v.position_ts,
        v.cell_id,

        r.zone_id,
        coalesce(r.jam_factor, 0.0) AS jam_factor,
        coalesce(r.road_kmh, v.kmh) AS road_kmh
    FROM courier.deliveries d
        JOIN courier.van_latest v ON d.van_id = v.van_id
        LEFT JOIN courier.road_latest r ON v.cell_id = r.cell_id
),
with_distance AS (
    SELECT
        *,
        -- great-circle distance (km)
        (2 * 6371 * asin(
          sqrt(
            power(sin(radians(drop_lat - van_lat)/2), 2) +
            cos(radians(van_lat)) * cos(radians(drop_lat)) *
            power(sin(radians(drop_lon - van_lon)/2), 2)
          )
        )) AS distance_km
    FROM joined
),
with_speed AS (
    SELECT
        *,
        -- usable speed (km/h), never below 4
        greatest(
          4.0,
          least(van_kmh, road_kmh) * (1 - jam_factor * 0.5)
        ) AS usable_kmh
    FROM with_distance
),
with_eta AS (
    SELECT
        *,
        -- minutes to arrival
        (distance_km / usable_kmh * 60.0) AS eta_minutes
    FROM with_speed
)
SELECT
    delivery_id,
    van_id,
    state,
    drop_lat, drop_lon,
    due_at,
    changed_at,

    van_lat, van_lon,
    van_kmh,
    position_ts,
    cell_id,

    zone_id,
    jam_factor,
    road_kmh,

    distance_km,
    usable_kmh,
    eta_minutes,

    -- arrival estimate on the event clock
    (position_ts + (eta_minutes * INTERVAL '1 minute')) AS eta_ts,

    -- lateness against the due time (interval)
    ((position_ts + (eta_minutes * INTERVAL '1 minute')) - due_at) AS lateness
FROM with_eta;
