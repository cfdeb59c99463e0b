-- The service's own database and role, beside Temporal's (created on the first start of the volume).
CREATE ROLE acp LOGIN PASSWORD 'acp';
CREATE DATABASE acp OWNER acp;
