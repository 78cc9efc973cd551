//! Presets (`preset` / `effort`): named defaults a request's own fields override (spec §9.3).

use std::collections::HashMap;

use protocol::request::CreateRequest;

use crate::config::Preset;
use crate::error::EngineError;

/// The legacy preset names and the canonical names they stand for (spec §9.3).
const PRESET_ALIASES: &[(&str, &str)] = &[
    ("fast-search", "fast"),
    ("pro-search", "low"),
    ("deep-research", "medium"),
    ("advanced-deep-research", "high"),
];

/// Applies the request's `effort` (or else `preset`) from the operator's presets: every
/// field the request leaves unset takes the preset's value; a request tool replaces the
/// preset's tool of the same type, and the preset's other tools stay. Whether a preset was
/// applied: a request naming none is left as it was.
pub fn apply_preset(
    request: &mut CreateRequest,
    presets: &HashMap<String, Preset>,
) -> Result<bool, EngineError> {
    let (param, name) = match (&request.effort, &request.preset) {
        (Some(effort), _) => ("effort", effort.clone()),
        (None, Some(preset)) => ("preset", preset.clone()),
        (None, None) => return Ok(false),
    };
    let canonical = PRESET_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name.as_str(), |(_, canonical)| canonical);
    let Some(preset) = presets.get(canonical) else {
        let mut known: Vec<&str> = presets.keys().map(String::as_str).collect();
        known.sort_unstable();
        let message = if known.is_empty() {
            format!(
                "{param} \"{name}\" is not available: this server defines no presets; set `model`"
            )
        } else {
            format!(
                "{param} \"{name}\" is not a preset of this server (it has: {})",
                known.join(", ")
            )
        };
        return Err(EngineError::invalid(param, message));
    };
    if request.model.is_none() && request.models.is_none() {
        request.model = preset.model.clone();
        request.models = preset.models.clone();
    }
    request.max_steps = request.max_steps.or(preset.max_steps);
    request.instructions = request
        .instructions
        .take()
        .or_else(|| preset.instructions.clone());
    request.max_output_tokens = request.max_output_tokens.or(preset.max_output_tokens);
    if !preset.tools.is_empty() {
        let own = request.tools.take().unwrap_or_default();
        let mut tools: Vec<protocol::request::Tool> = preset
            .tools
            .iter()
            .filter(|tool| !own.iter().any(|mine| mine.type_name() == tool.type_name()))
            .cloned()
            .collect();
        tools.extend(own);
        request.tools = Some(tools);
    }
    Ok(true)
}
