//! `web_search` (being written).
