-- agentd schema, version 10: the model turns of a run (one JSON array of
-- protocol::listing::ModelTurn: step, model, start, duration, time to first token, tokens,
-- error), written with the response row by the writes that already store it (put_response,
-- end_run). NULL: none recorded (a run still going, or one stored before this version).
ALTER TABLE responses ADD COLUMN turns_json TEXT;
