-- source: risingwavelabs/risingwave-data-talks-workshop-2024-03-04:workshop.md (materialized views in order, commit 3dde02ae2577db5ab2c2d3420df5bfb2e14e0fa7) + rw_ddl.py (the Kafka table, commit e27c04d13d910c9110eb389b943489ce571bf2ac)
-- modeled on: a Kafka-fed CREATE TABLE IF NOT EXISTS with mixed-case columns and `string`, a plain zone table seeded by INSERT, joins of the table with the zone table twice (aliases), NOW() - INTERVAL filters, COUNT/MAX per zone with LIKE, a view joined on a range condition against a one-row aggregate view, ORDER BY an output alias DESC LIMIT 10, TUMBLE over a table grouped by window_start, window_end and ORDER BY an output alias
-- dialect: risingwave
-- check: ok
CREATE TABLE IF NOT EXISTS ride_log (
    VendorRef bigint,
    pickup_at timestamp,
    dropoff_at timestamp,
    riders numeric,
    distance numeric,
    store_flag string,
    PickupArea bigint,
    DropoffArea bigint,
    fare numeric,
    tip numeric,
    total numeric
) WITH (
    connector = 'kafka',
    topic = 'ride_log',
    properties.bootstrap.server = 'message_queue:29092'
) FORMAT PLAIN ENCODE JSON;

CREATE TABLE area (
    area_id int,
    district text,
    area_name text,
    service_kind text
);

INSERT INTO area VALUES (1, 'Queens', 'JFK Airport', 'Airports'), (2, 'Queens', 'LaGuardia Airport', 'Airports'),
    (3, 'Manhattan', 'Midtown Center', 'Yellow Zone'), (4, 'Brooklyn', 'Park Slope', 'Boro Zone');

CREATE MATERIALIZED VIEW recent_rides AS
 SELECT area.area_name AS pickup_area, area_1.area_name AS dropoff_area, pickup_at, dropoff_at
 FROM ride_log
 JOIN area ON ride_log.PickupArea = area.area_id
 JOIN area AS area_1 ON ride_log.DropoffArea = area_1.area_id
 WHERE dropoff_at > now() - interval '1 minute';

CREATE MATERIALIZED VIEW airport_pickup_counts AS
    SELECT count(*) AS cnt, area.area_name
    FROM ride_log JOIN area ON ride_log.PickupArea = area.area_id
    WHERE area.area_name LIKE '%Airport'
    GROUP BY area.area_name;

CREATE MATERIALIZED VIEW airport_pickups AS
SELECT pickup_at, pickuparea
FROM ride_log JOIN area ON ride_log.PickupArea = area.area_id
WHERE area.district = 'Queens' AND area.area_name = 'JFK Airport';

CREATE MATERIALIZED VIEW latest_airport_pickup AS
    SELECT max(pickup_at) AS latest_pickup
    FROM ride_log JOIN area ON ride_log.PickupArea = area.area_id
    WHERE area.district = 'Queens' AND area.area_name = 'JFK Airport';

CREATE MATERIALIZED VIEW airport_pickups_hour_before AS
    SELECT count(*) AS cnt
    FROM airport_pickups
        JOIN latest_airport_pickup ON airport_pickups.pickup_at > latest_airport_pickup.latest_pickup - interval '1 hour'
        JOIN area ON airport_pickups.PickupArea = area.area_id
    WHERE area.district = 'Queens' AND area.area_name = 'JFK Airport';

CREATE MATERIALIZED VIEW busiest_dropoff_areas AS SELECT
    area.area_name AS dropoff_area,
    count(*) AS recent_dropoffs
FROM ride_log JOIN area ON ride_log.DropoffArea = area.area_id
WHERE ride_log.dropoff_at > (NOW() - INTERVAL '1' MINUTE)
GROUP BY area.area_name
ORDER BY recent_dropoffs DESC
    LIMIT 10;

CREATE MATERIALIZED VIEW longest_recent_rides AS SELECT
        pickup_at, dropoff_at, area_pu.area_name AS pickup_area, area_do.area_name AS dropoff_area, distance
    FROM ride_log
    JOIN area AS area_pu ON ride_log.PickupArea = area_pu.area_id
    JOIN area AS area_do ON ride_log.DropoffArea = area_do.area_id
    WHERE ride_log.pickup_at > (NOW() - INTERVAL '5' MINUTE)
    ORDER BY distance DESC
    LIMIT 10;

CREATE MATERIALIZED VIEW fare_per_minute AS
SELECT avg(fare) AS avg_fare_per_min, count(*) AS rides_per_min, window_start, window_end
FROM TUMBLE(ride_log, pickup_at, INTERVAL '1' MINUTE)
GROUP BY window_start, window_end
ORDER BY rides_per_min ASC;
