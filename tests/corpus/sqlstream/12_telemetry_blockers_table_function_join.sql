-- source: github NigelThomas/telemetry:telemetry-blockers.sql, commit 256b53be3a6b558c028a70d09bae5ec25ff1fd0e (2020-12-10)
-- modeled on: diagnostic query run in sqlline: a one-shot (non-streaming) JOIN of two derived tables, each a filtered SELECT over the telemetry table function TABLE(getStreamOperatorInfo(0,1)), with a LIKE join condition built by string concatenation
-- dialect: sqlstream
-- check: 12_telemetry_blockers_table_function_join.sql:12:19: error: unsupported table function GETSTREAMOPERATORINFO
-- fair rejection: a one-shot diagnostic join over s-Server's own telemetry table function getStreamOperatorInfo, not a streaming join over data; nothing to map it to
-- find operators that are blocked (overflowing) and the operator blocking them

SELECT ovf.node_id as stuck_node_id, ovf.sched_state as stuck_state
     , und.node_id as holding_node_id, und.sched_state as holding_state
     , und.source_sql holding_sql
FROM (
    SELECT * from TABLE(getStreamOperatorInfo(0,1)) 
    WHERE last_exec_result = 'UND'
) und
JOIN (
    SELECT * FROM TABLE(getStreamOperatorInfo(0,1))
    WHERE last_exec_result = 'OVF'
    ) ovf
ON ','||ovf.output_nodes||',' LIKE '%,'||cast(und.node_id AS VARCHAR(5))||',*' 
;
