-- agentd schema, version 9: the current access token of an OAuth grant (sealed, field
-- 'oauth.access_token') and when it expires (Unix seconds; NULL: the server did not say), so
-- runs on any replica, and after a restart, use it until shortly before it expires instead of
-- refreshing for every run. (Versions 7 and 8 belong to other changes.)
ALTER TABLE oauth_grants ADD COLUMN access_token_sealed TEXT;
ALTER TABLE oauth_grants ADD COLUMN access_expires_at BIGINT;
