//! The admin API's bodies and answers as `$ref`s (generated from `protocol::admin`).

use protocol::admin::{
    ApiKey, ApiKeyList, Connector, ConnectorCreate, ConnectorEventList, ConnectorList,
    ConnectorOAuthStart, ConnectorOAuthStarted, ConnectorPatch, ConnectorRotate,
    ConnectorSummaryList, ConnectorTestResult, ConnectorToolList, Deleted, KeyCreate, Project,
    ProjectBody, ProjectList,
};
use schemars::generate::SchemaGenerator;
use serde_json::Value;

/// `$ref`s to the admin bodies and answers.
pub struct AdminSchemas {
    pub(super) connector_create: Value,
    pub(super) connector_patch: Value,
    pub(super) connector_rotate: Value,
    pub(super) connector: Value,
    pub(super) connector_list: Value,
    pub(super) connector_summaries: Value,
    pub(super) test_result: Value,
    pub(super) tool_list: Value,
    pub(super) event_list: Value,
    pub(super) project_body: Value,
    pub(super) project: Value,
    pub(super) project_list: Value,
    pub(super) key_create: Value,
    pub(super) key: Value,
    pub(super) key_list: Value,
    pub(super) deleted: Value,
    pub(super) oauth_start: Value,
    pub(super) oauth_started: Value,
    pub(super) response_list: Value,
    pub(super) approval_list: Value,
    pub(super) turn_list: Value,
}

impl AdminSchemas {
    pub fn generate(answers: &mut SchemaGenerator, requests: &mut SchemaGenerator) -> AdminSchemas {
        AdminSchemas {
            connector_create: requests.subschema_for::<ConnectorCreate>().to_value(),
            connector_patch: requests.subschema_for::<ConnectorPatch>().to_value(),
            connector_rotate: requests.subschema_for::<ConnectorRotate>().to_value(),
            project_body: requests.subschema_for::<ProjectBody>().to_value(),
            key_create: requests.subschema_for::<KeyCreate>().to_value(),
            connector: answers.subschema_for::<Connector>().to_value(),
            connector_list: answers.subschema_for::<ConnectorList>().to_value(),
            connector_summaries: answers.subschema_for::<ConnectorSummaryList>().to_value(),
            test_result: answers.subschema_for::<ConnectorTestResult>().to_value(),
            tool_list: answers.subschema_for::<ConnectorToolList>().to_value(),
            event_list: answers.subschema_for::<ConnectorEventList>().to_value(),
            project: answers.subschema_for::<Project>().to_value(),
            project_list: answers.subschema_for::<ProjectList>().to_value(),
            key: answers.subschema_for::<ApiKey>().to_value(),
            key_list: answers.subschema_for::<ApiKeyList>().to_value(),
            deleted: answers.subschema_for::<Deleted>().to_value(),
            oauth_start: requests.subschema_for::<ConnectorOAuthStart>().to_value(),
            oauth_started: answers.subschema_for::<ConnectorOAuthStarted>().to_value(),
            response_list: answers
                .subschema_for::<protocol::listing::ResponseList>()
                .to_value(),
            approval_list: answers
                .subschema_for::<protocol::listing::PendingApprovalList>()
                .to_value(),
            turn_list: answers
                .subschema_for::<protocol::listing::ModelTurnList>()
                .to_value(),
        }
    }

    /// Applies the request-side renames to the request bodies' references.
    pub fn rename(&mut self, rename: &dyn Fn(&mut Value)) {
        for body in [
            &mut self.connector_create,
            &mut self.connector_patch,
            &mut self.connector_rotate,
            &mut self.project_body,
            &mut self.key_create,
            &mut self.oauth_start,
        ] {
            rename(body);
        }
    }
}
