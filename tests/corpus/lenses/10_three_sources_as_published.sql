-- source: https://docs.lenses.io/4.0/sql/streaming/joins/ (Lenses 4.0 docs, "Joins", section "Joining more than 2 sources")
-- modeled on: the published example kept with its slips: a `WITH v AS (SELECT TABLE ... FROM a INNER JOIN b ON ...)` whose projection qualifies by singular names (one a reserved word), has a doubled comma, then `INSERT INTO target SELECT TABLE * FROM v INNER JOIN c ON <misspelt v>.id = c.id;`
-- dialect: lenses
-- check: 10_three_sources_as_published.sql:13:5: error: unknown input 'member' in member.name
-- fair rejection: broken SQL as published (qualifiers by singular names, `group` a reserved word, a doubled comma, a misspelt view name in ON)
-- topics (declared in Kafka, not in the program):
CREATE STREAM members (_key INTEGER, id INTEGER, name VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/members');
CREATE STREAM "groups" (_key INTEGER, member_id INTEGER, label VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/groups');
CREATE STREAM meetingRoom (_key INTEGER, group_id INTEGER, room VARCHAR) WITH (connector = 'files', format = 'json', path = '/data/meeting-room');
-- program:
WITH memberGroups AS (
 SELECT TABLE
    member.name
   , group.label,
   , group._key AS group_id
 FROM
    members INNER JOIN groups
        ON groups.member_id = members.id
);

INSERT INTO target
SELECT TABLE *
FROM memberGroups INNER JOIN meetingRoom
    ON memberGropus.group_id = meetingRoom.group_id;
