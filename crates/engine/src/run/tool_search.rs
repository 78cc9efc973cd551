//! `tool_search`: a catalog search of the deferred MCP servers. The found tools become callable
//! from the next step on; the search is a `tool_search_output` item (spec decision 5).

use protocol::input::InputItem;
use protocol::output::{
    FunctionType, NamespaceTool, NamespaceToolDef, NamespaceType, OutputItem, ToolSearchOutput,
};

use crate::ids::new_id;
use crate::model::ToolCall;

use super::state::Machine;

#[derive(serde::Deserialize)]
struct Args {
    query: String,
    #[serde(default)]
    server_label: Option<String>,
}

impl Machine {
    /// Runs a catalog search of the deferred servers and loads what it found.
    pub(super) fn tool_search(&mut self, call: ToolCall) {
        let args: Args = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(err) => {
                let problem = format!(
                    "error: tool_search needs {{\"query\": string, \"server_label\"?: string}}: {err}"
                );
                self.refuse_call(call, problem);
                return;
            }
        };
        let found = self
            .plan
            .registry
            .search(&args.query, args.server_label.as_deref());
        let mut namespaces: Vec<NamespaceTool> = Vec::new();
        for (server, tool) in found {
            let def = &self.plan.registry.servers()[server];
            let entry = NamespaceToolDef {
                kind: FunctionType::Function,
                name: tool.name,
                description: tool.description,
                parameters: Some(tool.input_schema.clone()),
            };
            match namespaces.iter_mut().find(|n| n.name == def.label) {
                Some(namespace) => namespace.tools.push(entry),
                None => namespaces.push(NamespaceTool {
                    kind: NamespaceType::Namespace,
                    name: def.label.clone(),
                    description: def.description.clone().unwrap_or_default(),
                    tools: vec![entry],
                }),
            }
        }
        let output = ToolSearchOutput {
            id: new_id("tso"),
            call_id: Some(call.id),
            status: "completed".to_owned(),
            execution: "server".to_owned(),
            arguments: Some(call.arguments),
            tools: namespaces,
        };
        self.transcript
            .push(InputItem::ToolSearchOutput(output.clone()));
        self.emit_item(OutputItem::ToolSearchOutput(output));
    }
}
