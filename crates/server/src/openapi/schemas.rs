//! The document's component schemas, generated from the protocol types (`schemars`, the
//! `protocol/schema` feature). Requests are described as serde deserializes them and answers
//! as serde serializes them: a field with `#[serde(default)]` may be left out of a request but
//! is always present in an answer. A type used on both sides whose two schemas differ gets a
//! second component for the request side, named `{Name}Input`.

use std::collections::{BTreeMap, BTreeSet};

use protocol::compact::{CompactRequest, CompactResource};
use protocol::conversations::{
    AddItems, Conversation, CreateConversation, Deleted, ItemList, UpdateConversation,
};
use protocol::error::ErrorEnvelope;
use protocol::events::StreamEvent;
use protocol::request::CreateRequest;
use protocol::response::{CancelAck, ModelList, Response, ResponseFileList};
use schemars::Schema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::transform::RecursiveTransform;
use serde_json::{Map, Value};

/// Where component schemas live in the document.
const COMPONENTS: &str = "#/components/schemas/";

/// The component schemas and a `$ref` to each body the routes use.
pub struct Schemas {
    /// `components.schemas`.
    pub components: Map<String, Value>,
    pub create_request: Value,
    pub response: Value,
    pub stream_event: Value,
    pub error: Value,
    pub cancel_ack: Value,
    pub file_list: Value,
    pub model_list: Value,
    pub conversation: Value,
    pub deleted: Value,
    pub item_list: Value,
    pub create_conversation: Value,
    pub update_conversation: Value,
    pub add_items: Value,
    pub compact_request: Value,
    pub compact_resource: Value,
    /// The admin API's bodies and answers.
    pub admin: super::admin_schemas::AdminSchemas,
}

impl Schemas {
    pub fn generate() -> Schemas {
        let mut answers = generator(SchemaSettings::draft2020_12().for_serialize());
        let response = answers.subschema_for::<Response>();
        let stream_event = answers.subschema_for::<StreamEvent>();
        let error = answers.subschema_for::<ErrorEnvelope>();
        let cancel_ack = answers.subschema_for::<CancelAck>();
        let file_list = answers.subschema_for::<ResponseFileList>();
        let model_list = answers.subschema_for::<ModelList>();
        let conversation = answers.subschema_for::<Conversation>();
        let deleted = answers.subschema_for::<Deleted>();
        let item_list = answers.subschema_for::<ItemList>();
        let compact_resource = answers.subschema_for::<CompactResource>();
        let mut requests = generator(SchemaSettings::draft2020_12().for_deserialize());
        let create_request = requests.subschema_for::<CreateRequest>();
        let create_conversation = requests.subschema_for::<CreateConversation>();
        let update_conversation = requests.subschema_for::<UpdateConversation>();
        let add_items = requests.subschema_for::<AddItems>();
        let compact_request = requests.subschema_for::<CompactRequest>();
        let mut admin = super::admin_schemas::AdminSchemas::generate(&mut answers, &mut requests);

        let mut components = answers.take_definitions(true);
        let request_side = requests.take_definitions(true);
        let renames = renames(&components, &request_side);
        for (name, mut schema) in request_side {
            rename_refs(&mut schema, &renames);
            let name = renames.get(&name).cloned().unwrap_or(name);
            components.entry(name).or_insert(schema);
        }
        let request_body = |schema: Schema| {
            let mut schema = schema.to_value();
            rename_refs(&mut schema, &renames);
            schema
        };
        let create_request = request_body(create_request);
        admin.rename(&|value| rename_refs(value, &renames));
        Schemas {
            components,
            create_request,
            response: response.to_value(),
            stream_event: stream_event.to_value(),
            error: error.to_value(),
            cancel_ack: cancel_ack.to_value(),
            file_list: file_list.to_value(),
            model_list: model_list.to_value(),
            conversation: conversation.to_value(),
            deleted: deleted.to_value(),
            item_list: item_list.to_value(),
            create_conversation: request_body(create_conversation),
            update_conversation: request_body(update_conversation),
            add_items: request_body(add_items),
            compact_request: request_body(compact_request),
            compact_resource: compact_resource.to_value(),
            admin,
        }
    }
}

/// A generator writing `$ref`s into `#/components/schemas/`, JSON Schema 2020-12 (OpenAPI
/// 3.1's dialect), with integer widths as bounds.
pub(super) fn generator(settings: SchemaSettings) -> SchemaGenerator {
    settings
        .with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
        })
        .with_transform(RecursiveTransform(integer_bounds))
        .into_generator()
}

/// schemars marks a 32-bit integer with `format` and, for unsigned ones, `minimum: 0`; serde
/// refuses values outside the type, so the schema says so too.
fn integer_bounds(schema: &mut Schema) {
    let (minimum, maximum): (i64, i64) = match schema.get("format").and_then(Value::as_str) {
        Some("uint32") => (0, u32::MAX.into()),
        Some("int32") => (i32::MIN.into(), i32::MAX.into()),
        _ => return,
    };
    schema.insert("minimum".to_owned(), minimum.into());
    schema.insert("maximum".to_owned(), maximum.into());
}

/// The request-side definitions that need their own name: those whose schema differs from the
/// answer-side one of the same name, directly or through a renamed definition they refer to.
fn renames(
    answers: &Map<String, Value>,
    requests: &Map<String, Value>,
) -> BTreeMap<String, String> {
    let mut renamed: BTreeSet<String> = BTreeSet::new();
    loop {
        let map = names(&renamed, answers, requests);
        let more: Vec<String> = requests
            .iter()
            .filter(|(name, _)| !renamed.contains(*name))
            .filter(|(name, schema)| {
                answers.get(*name).is_some_and(|answer| {
                    let mut schema = (*schema).clone();
                    rename_refs(&mut schema, &map);
                    &schema != answer
                })
            })
            .map(|(name, _)| name.clone())
            .collect();
        if more.is_empty() {
            return map;
        }
        renamed.extend(more);
    }
}

/// `Name` -> `NameInput` (or `NameInput2`, … when that is taken) for each renamed definition.
fn names(
    renamed: &BTreeSet<String>,
    answers: &Map<String, Value>,
    requests: &Map<String, Value>,
) -> BTreeMap<String, String> {
    let mut taken: BTreeSet<String> = answers.keys().chain(requests.keys()).cloned().collect();
    renamed
        .iter()
        .map(|name| {
            let mut new = format!("{name}Input");
            let mut n = 2;
            while taken.contains(&new) {
                new = format!("{name}Input{n}");
                n += 1;
            }
            taken.insert(new.clone());
            (name.clone(), new)
        })
        .collect()
}

/// Points every `$ref` to a renamed definition at its new name.
fn rename_refs(value: &mut Value, renames: &BTreeMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match (key.as_str(), value) {
                    ("$ref", Value::String(reference)) => {
                        if let Some(new) = reference
                            .strip_prefix(COMPONENTS)
                            .and_then(|name| renames.get(name))
                        {
                            *reference = format!("{COMPONENTS}{new}");
                        }
                    }
                    (_, value) => rename_refs(value, renames),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rename_refs(item, renames)),
        _ => {}
    }
}
