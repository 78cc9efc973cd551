//! `fetch_url` (being written).
