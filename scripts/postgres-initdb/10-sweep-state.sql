-- The sweep's state database (ledger, act claims, hand-offs, backlog): its own database beside
-- Airflow's metadata DB, never Airflow's tables. docker-compose.yaml mounts this folder at
-- /docker-entrypoint-initdb.d: the postgres image runs it once, on first start (an empty data
-- volume), as POSTGRES_USER (airflow), which so owns it. Its tables: `sweep-state upgrade
-- --conn-id sweep_state` (airflow-init runs it at every start; it is a no-op when up to date).
CREATE DATABASE sweep_state;
