//! An MCP server as a back end, through the engine's connector port.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use engine::mcp::{McpCallResult, McpConnector, McpError, McpServer, McpSession, McpToolInfo};
use finance::{
    Backend, BackendError, BudgetSettings, Category, DataRequest, McpBackend, McpSource, Period,
    Symbol,
};
use serde_json::{Map, Value, json};

/// The calls a session received: (tool, arguments).
type Calls = Arc<Mutex<Vec<(String, Map<String, Value>)>>>;

/// A connector to one scripted server that records connections and calls.
#[derive(Default)]
struct Scripted {
    connects: Mutex<usize>,
    calls: Calls,
}

struct Session {
    calls: Calls,
}

#[async_trait::async_trait]
impl McpConnector for Scripted {
    async fn connect(&self, server: &McpServer) -> Result<Box<dyn McpSession>, McpError> {
        assert_eq!(server.url, "https://mcp.example.com/mcp");
        *self.connects.lock().unwrap() += 1;
        Ok(Box::new(Session {
            calls: self.calls.clone(),
        }))
    }
}

#[async_trait::async_trait]
impl McpSession for Session {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        let tool = |name: &str, properties: Value| McpToolInfo {
            name: name.to_owned(),
            description: None,
            input_schema: json!({"type": "object", "properties": properties}).into(),
            read_only: Some(true),
        };
        Ok(vec![
            tool("GLOBAL_QUOTE", json!({"symbol": {}, "datatype": {}})),
            tool(
                "INCOME_STATEMENT",
                json!({"symbol": {}, "period": {}, "limit": {}}),
            ),
            tool("BROKEN", json!({"symbol": {}})),
        ])
    }

    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<McpCallResult, McpError> {
        self.calls
            .lock()
            .unwrap()
            .push((name.to_owned(), arguments));
        Ok(match name {
            "GLOBAL_QUOTE" => McpCallResult {
                output: json!({"Global Quote": {"01. symbol": "IBM", "05. price": "230.50"}})
                    .to_string(),
                is_error: false,
            },
            "INCOME_STATEMENT" => McpCallResult {
                output: json!({"symbol": "IBM", "annualReports": [
                    {"fiscalDateEnding": "2024-12-31", "totalRevenue": "62753000000"},
                    {"fiscalDateEnding": "2023-12-31", "totalRevenue": "61860000000"}
                ]})
                .to_string(),
                is_error: false,
            },
            _ => McpCallResult {
                output: "upstream quota exceeded".to_owned(),
                is_error: true,
            },
        })
    }
}

fn source() -> McpSource {
    let mut tools = BTreeMap::new();
    tools.insert(Category::Quote, "GLOBAL_QUOTE".to_owned());
    tools.insert(Category::IncomeStatement, "INCOME_STATEMENT".to_owned());
    tools.insert(Category::CashFlow, "BROKEN".to_owned());
    tools.insert(Category::BalanceSheet, "MISSING".to_owned());
    McpSource {
        label: "av".to_owned(),
        server: McpServer {
            label: "av".to_owned(),
            url: "https://mcp.example.com/mcp".to_owned(),
            authorization: Some("secret-token".to_owned()),
            headers: BTreeMap::new(),
        },
        connector: None,
        tools,
        symbol_argument: "symbol".to_owned(),
    }
}

#[tokio::test]
async fn categories_map_to_tools_with_the_arguments_they_declare() {
    let connector = Arc::new(Scripted::default());
    let backend = McpBackend::new(connector.clone(), source(), BudgetSettings::MCP);
    assert_eq!(backend.source(), "mcp:av");
    assert!(backend.supports(Category::Quote) && !backend.supports(Category::Filings));

    let quote = backend
        .fetch(&DataRequest::new(
            Category::Quote,
            Some(Symbol::ticker("ibm")),
        ))
        .await
        .unwrap();
    assert_eq!(quote.table.columns, ["field", "value"]);
    assert!(
        quote
            .table
            .rows
            .contains(&vec![json!("05. price"), json!("230.50")])
    );

    let mut income = DataRequest::new(Category::IncomeStatement, Some(Symbol::ticker("IBM")));
    income.period = Some(Period::Annual);
    income.limit = 2;
    let statement = backend.fetch(&income).await.unwrap();
    assert_eq!(statement.table.rows.len(), 2);

    let calls = connector.calls.lock().unwrap().clone();
    assert_eq!(calls[0].0, "GLOBAL_QUOTE");
    // Only what the tool declares: no period or limit for the quote tool.
    assert_eq!(Value::Object(calls[0].1.clone()), json!({"symbol": "IBM"}));
    assert_eq!(
        Value::Object(calls[1].1.clone()),
        json!({"symbol": "IBM", "period": "annual", "limit": 2})
    );

    let failed = backend
        .fetch(&DataRequest::new(
            Category::CashFlow,
            Some(Symbol::ticker("IBM")),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(&failed, BackendError::Upstream { message, .. } if message.contains("quota")),
        "{failed:?}"
    );
    let missing = backend
        .fetch(&DataRequest::new(
            Category::BalanceSheet,
            Some(Symbol::ticker("IBM")),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(&missing, BackendError::Config(m) if m.contains("MISSING")),
        "{missing:?}"
    );
    assert_eq!(
        *connector.connects.lock().unwrap(),
        1,
        "one session for every call"
    );
}
