-- source: risingwavelabs/awesome-stream-processing:03-solution-demos/health_care/sql/rw.sql, commit 9857e1f7f3b49a05dbe54412522057a6d40323a9
-- modeled on: SET TIME ZONE, DROP SINK/MATERIALIZED VIEW/SOURCE/TABLE IF EXISTS at the top, a Kafka JSON source (STRING columns, no startup mode), a threshold table with PRIMARY KEY and DEFAULTs plus INSERT, a stream LEFT JOIN table MV with CASE/CONCAT/MD5, a TUMBLE(source, col, '10 MINUTES') CTE with FIRST_VALUE/LAST_VALUE(... ORDER BY), a UNION ALL CTE under SELECT DISTINCT ON (...), and CREATE SINK ... FROM mv WITH (connector = 'jdbc', ...)
-- dialect: risingwave
-- check: ok
-- Session time zone
SET TIME ZONE 'Europe/Lisbon';

-- Drop old objects first so the script can be rerun
DROP SINK IF EXISTS ward_alerts_sink;

DROP MATERIALIZED VIEW IF EXISTS ward_alerts;

DROP MATERIALIZED VIEW IF EXISTS reading_breach_alerts;
DROP MATERIALIZED VIEW IF EXISTS reading_drift_alerts;

DROP SOURCE IF EXISTS bedside_readings;
DROP TABLE IF EXISTS reading_limits;

-- Kafka source of bedside monitor readings
CREATE SOURCE bedside_readings (
    resident_id STRING,         -- ward resident identifier
    monitor_id STRING,          -- bedside monitor serial
    taken_at TIMESTAMP,         -- reading time
    pulse INT,                  -- beats per minute
    spo2 DECIMAL,               -- oxygen saturation (%)
    glucose DECIMAL             -- blood glucose (mmol/L)
) WITH (
    connector = 'kafka',
    topic = 'bedside_readings',
    properties.bootstrap.server = 'localhost:9092'
) FORMAT PLAIN ENCODE JSON;

-- Per-resident limits
CREATE TABLE reading_limits (
    limit_id INT PRIMARY KEY,
    resident_id VARCHAR,
    care_plan VARCHAR,
    pulse_low INT DEFAULT 45,
    pulse_high INT DEFAULT 125,
    spo2_low DECIMAL DEFAULT 92.00,
    glucose_low DECIMAL DEFAULT 4.00,
    glucose_high DECIMAL DEFAULT 7.50,
    changed_by VARCHAR DEFAULT 'nurse',
    changed_at TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP()
);

-- Default limits for the first residents
INSERT INTO reading_limits (limit_id, resident_id, care_plan)
VALUES (1, 'R100', 'standard'),
       (2, 'R200', 'standard'),
       (3, 'R300', 'standard');

-- Single-reading breaches (level 1)
CREATE MATERIALIZED VIEW reading_breach_alerts AS
SELECT
    b.resident_id AS resident_id,
    b.taken_at AS taken_at,
    CASE
        WHEN b.pulse < l.pulse_low OR b.pulse > l.pulse_high THEN 'pulse'
        WHEN b.spo2 < l.spo2_low THEN 'spo2'
        WHEN b.glucose < l.glucose_low OR b.glucose > l.glucose_high THEN 'glucose'
        END AS "alert_kind",
    CASE
        WHEN b.pulse < l.pulse_low THEN CONCAT('Pulse low: ', b.pulse, ' bpm')
        WHEN b.pulse > l.pulse_high THEN CONCAT('Pulse high: ', b.pulse, ' bpm')
        WHEN b.spo2 < l.spo2_low THEN CONCAT('SpO2 low: ', b.spo2, '%')
        WHEN b.glucose < l.glucose_low THEN CONCAT('Glucose low: ', b.glucose, ' mmol/L')
        WHEN b.glucose > l.glucose_high THEN CONCAT('Glucose high: ', b.glucose, ' mmol/L')
        END AS "alert_text",
    'level1' AS severity,
    MD5(CONCAT(b.resident_id, b.taken_at)) AS alert_id
FROM bedside_readings b
         LEFT JOIN reading_limits l ON b.resident_id = l.resident_id
WHERE
    (b.pulse < l.pulse_low OR b.pulse > l.pulse_high)
   OR (b.spo2 < l.spo2_low)
   OR (b.glucose < l.glucose_low OR b.glucose > l.glucose_high);

-- Drift over a window (level 2)
CREATE MATERIALIZED VIEW reading_drift_alerts AS
WITH w AS (
    SELECT  resident_id,
            LAST_VALUE(pulse ORDER BY taken_at) - FIRST_VALUE(pulse ORDER BY taken_at) AS pulse_rise,
            FIRST_VALUE(spo2 ORDER BY taken_at) - LAST_VALUE(spo2 ORDER BY taken_at) AS spo2_drop,
            window_end
    FROM TUMBLE(bedside_readings, taken_at, '10 MINUTES')
    GROUP BY resident_id, window_end
)
SELECT
    resident_id,
    window_end AS taken_at,
    'combined_drift' AS alert_kind,
    pulse_rise,
    spo2_drop,
    'level2' AS severity,
    MD5(CONCAT(resident_id, window_end, 'combined_drift')) AS alert_id
FROM w
WHERE pulse_rise >= 25 AND spo2_drop >= 4;

-- One alert stream, deduplicated per 30-second slot
CREATE MATERIALIZED VIEW ward_alerts AS
WITH merged AS (
    SELECT
      resident_id,
      taken_at,
      alert_kind,
      alert_text,
      severity,
      alert_id
    FROM reading_breach_alerts
    UNION ALL
    SELECT
      resident_id,
      taken_at,
      alert_kind,
      CONCAT('Pulse rose by ', pulse_rise, ' bpm and SpO2 fell by ', spo2_drop, '% within 10 minutes') AS alert_text,
      severity,
      alert_id
    FROM reading_drift_alerts
)
SELECT DISTINCT ON (resident_id, alert_kind, DATE_TRUNC('second', taken_at) - INTERVAL '30 seconds' * (EXTRACT(SECOND FROM taken_at)::INT / 30))
    resident_id,
    taken_at AS alert_time,
    alert_kind,
    alert_text,
    severity,
    alert_id
FROM merged;

CREATE SINK ward_alerts_sink FROM ward_alerts
WITH (
    connector='jdbc',
    jdbc.url='jdbc:mysql://localhost:3306/ward_alerts',
    user='alerts_writer',
    password='placeholder',
    table.name='alerts',
    type = 'append-only',
    force_append_only='true',
    primary_key = 'alert_id'
);
