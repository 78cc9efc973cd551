//! Every HTTP back end of `people_search` against a local server answering its documented
//! JSON (records full of sensitive fields, error shapes, rate-limit answers), the privacy
//! projection end to end through the tool, the network guard on every URL a back end
//! returns, and the embedded directory per project.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use engine::hosted::{CallContext, EventSink, HostedTool, NoFiles, ToolOutcome};
use netguard::Policy;
use people::{Apollo, Directory, GitHub, LocalDirectory, Orcid, Pdl, People, PeopleSearch, Scim};
use protocol::events::EventData;
use serde_json::{Value, json};

/// Values no output may contain: every one sits in a field the allow list drops.
const SENSITIVE: &[&str] = &[
    "ada.private@example.com",
    "ada@work.example",
    "+1-555-0100",
    "5550100",
    "12 Secret Lane",
    "SW1A 1AA",
    "1815-12-10",
    "1815",
    "female",
    "51.5072",
    "123-45-6789",
    "twitter-ada",
    "Loves long walks",
];

struct Events(Mutex<Vec<EventData>>);

impl EventSink for Events {
    fn emit(&self, event: EventData) {
        self.0.lock().unwrap().push(event);
    }
}

/// Runs one call of the tool over `directories`; returns the outcome and the events.
async fn call(
    directories: Vec<Arc<dyn Directory>>,
    local: Option<LocalDirectory>,
    project: &str,
    arguments: Value,
) -> (ToolOutcome, Vec<EventData>) {
    let people = Arc::new(People::with_directories(
        directories,
        local,
        Policy::strict(),
    ));
    let tool = PeopleSearch::new(people, 0).unwrap();
    let events = Events(Mutex::new(Vec::new()));
    let outcome = tool
        .call(
            &arguments.to_string(),
            CallContext {
                events: &events,
                next_source: 1,
                call_id: "call_1",
                conversation: "resp_1",
                project_id: project,
                files: &NoFiles,
            },
        )
        .await;
    let events = events.0.into_inner().unwrap();
    (outcome, events)
}

/// Everything the call produced, as text: model text, items, sources, events.
fn everything(outcome: &ToolOutcome, events: &[EventData]) -> String {
    format!(
        "{}\n{}\n{:?}\n{}",
        outcome.model_text,
        serde_json::to_string(&outcome.items).unwrap(),
        outcome.sources,
        serde_json::to_string(events).unwrap()
    )
}

fn assert_private(text: &str) {
    for secret in SENSITIVE {
        assert!(!text.contains(secret), "{secret:?} leaked:\n{text}");
    }
}

fn results(outcome: &ToolOutcome) -> Vec<Value> {
    let items = serde_json::to_value(&outcome.items).unwrap();
    assert_eq!(items[0]["type"], "people_search_results", "{items}");
    items[0]["results"].as_array().unwrap().clone()
}

async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}")
}

fn loopback() -> Policy {
    Policy::with_allowed(&["127.0.0.0/8".to_owned()]).unwrap()
}

type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;
type SeenQueries = Arc<Mutex<Vec<(HeaderMap, HashMap<String, String>)>>>;

#[tokio::test]
async fn pdl_records_are_projected_onto_the_allow_list() {
    let seen: Seen = Arc::default();
    async fn search(
        State(seen): State<Seen>,
        headers: HeaderMap,
        body: axum::Json<Value>,
    ) -> impl IntoResponse {
        seen.lock().unwrap().push((headers, body.0));
        axum::Json(
            json!({"status": 200, "total": 1, "scroll_token": "x", "data": [{
                "id": "qEnOZ5Oh0poWnQ1luFBfVw_0000",
                "full_name": "Ada Lovelace",
                "first_name": "ada", "last_name": "lovelace", "sex": "female",
                "birth_date": "1815-12-10", "birth_year": 1815,
                "linkedin_url": "linkedin.com/in/ada-lovelace",
                "work_email": "ada@work.example",
                "personal_emails": ["ada.private@example.com"],
                "recommended_personal_email": "ada.private@example.com",
                "mobile_phone": "+1-555-0100", "phone_numbers": ["+1-555-0100"],
                "job_title": "Principal Engineer", "job_title_role": "engineering",
                "job_company_name": "Analytical Engines",
                "location_name": "london, england, united kingdom",
                "location_locality": "London", "location_region": "England",
                "location_country": "United Kingdom",
                "location_street_address": "12 Secret Lane", "location_postal_code": "SW1A 1AA",
                "location_geo": "51.5072,-0.1276",
                "street_addresses": [{"street_address": "12 Secret Lane", "postal_code": "SW1A 1AA"}],
                "skills": ["mathematics", "engines"],
                "education": [{"school": {"name": "University of London"}, "degrees": ["bachelors"]}],
                "interests": ["Loves long walks"],
                "job_last_verified": "2025-03-01"
            }]}),
        )
    }
    let base = serve(
        axum::Router::new()
            .route("/v5/person/search", post(search))
            .with_state(seen.clone()),
    )
    .await;
    let pdl = Pdl::new("pdl-key", Some(&base), &loopback()).unwrap();
    let (outcome, events) = call(
        vec![Arc::new(pdl)],
        None,
        "p",
        json!({"queries": ["analytical engine pioneers"], "title": "engineer", "limit": 3}),
    )
    .await;
    assert_private(&everything(&outcome, &events));
    let results = results(&outcome);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["id"], 1);
    assert_eq!(
        results[0]["title"],
        "Ada Lovelace — Principal Engineer, Analytical Engines"
    );
    assert_eq!(results[0]["url"], "https://linkedin.com/in/ada-lovelace");
    assert_eq!(results[0]["last_updated"], "2025-03-01");
    let snippet = results[0]["snippet"].as_str().unwrap();
    assert!(
        snippet.contains("Location: London, England, United Kingdom"),
        "{snippet}"
    );
    assert!(
        snippet.contains("University of London, bachelors"),
        "{snippet}"
    );
    assert!(snippet.contains("Source: pdl"), "{snippet}");
    assert_eq!(outcome.invocations, vec![("search_people".to_owned(), 1)]);
    assert_eq!(
        outcome.sources[0].url,
        "https://linkedin.com/in/ada-lovelace"
    );
    assert!(
        outcome.model_text.contains("[1] Ada Lovelace"),
        "{}",
        outcome.model_text
    );

    let (headers, body) = seen.lock().unwrap()[0].clone();
    assert_eq!(headers["x-api-key"], "pdl-key");
    assert_eq!(body["size"], 3);
    let must = body["query"]["bool"]["must"].to_string();
    assert!(
        must.contains(r#"{"match":{"job_title":"engineer"}}"#),
        "{must}"
    );
    assert!(must.contains("analytical engine pioneers"), "{must}");
}

#[tokio::test]
async fn pdl_no_match_rate_limits_and_errors() {
    async fn search(body: axum::Json<Value>) -> axum::response::Response {
        let text = body.0.to_string();
        if text.contains("nobody") {
            (StatusCode::NOT_FOUND, axum::Json(json!({"status": 404, "error": {"type": "not_found", "message": "No records were found matching your search"}}))).into_response()
        } else if text.contains("busy") {
            (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "30")], axum::Json(json!({"status": 429, "error": {"type": "rate_limit_error", "message": "An error occurred due to requests hitting the API too quick"}}))).into_response()
        } else {
            (StatusCode::UNAUTHORIZED, axum::Json(json!({"status": 401, "error": {"type": "authentication_error", "message": "Invalid API Key"}}))).into_response()
        }
    }
    let base = serve(axum::Router::new().route("/v5/person/search", post(search))).await;
    let pdl =
        || -> Arc<dyn Directory> { Arc::new(Pdl::new("k", Some(&base), &loopback()).unwrap()) };

    let (none, _) = call(vec![pdl()], None, "p", json!({"queries": ["nobody"]})).await;
    assert!(results(&none).is_empty());
    assert!(
        none.model_text.starts_with("No people found"),
        "{}",
        none.model_text
    );
    assert_eq!(none.invocations, vec![("search_people".to_owned(), 1)]);

    let (busy, _) = call(vec![pdl()], None, "p", json!({"queries": ["busy"]})).await;
    assert!(
        busy.model_text.starts_with("people_search failed"),
        "{}",
        busy.model_text
    );
    assert!(
        busy.model_text
            .contains("rate limited by the service (retry after 30 s)"),
        "{}",
        busy.model_text
    );
    assert!(busy.invocations.is_empty());

    let (denied, _) = call(vec![pdl()], None, "p", json!({"queries": ["x"]})).await;
    assert!(
        denied.model_text.contains("HTTP 401: Invalid API Key"),
        "{}",
        denied.model_text
    );
    assert!(!denied.model_text.contains("\"k\""));
}

#[tokio::test]
async fn apollo_filters_and_fields() {
    let seen: Seen = Arc::default();
    async fn search(
        State(seen): State<Seen>,
        headers: HeaderMap,
        body: axum::Json<Value>,
    ) -> axum::response::Response {
        seen.lock().unwrap().push((headers, body.0.clone()));
        if body.0["q_keywords"] == "slow" {
            return (StatusCode::TOO_MANY_REQUESTS, axum::Json(json!({"message": "The maximum number of api calls allowed for api/v1/mixed_people/api_search is 50 times per minute."}))).into_response();
        }
        axum::Json(json!({
            "people": [{
                "id": "64a7ff0cc4dfae00013df1a5", "first_name": "Grace", "last_name": "Hopper",
                "name": "Grace Hopper", "title": "Rear Admiral", "headline": "Loves long walks",
                "email": "ada@work.example", "email_status": "verified",
                "personal_emails": ["ada.private@example.com"],
                "phone_numbers": [{"raw_number": "+1-555-0100"}],
                "linkedin_url": "http://www.linkedin.com/in/grace", "twitter_url": "twitter-ada",
                "city": "Arlington", "state": "Virginia", "country": "United States",
                "street_address": "12 Secret Lane", "postal_code": "SW1A 1AA",
                "departments": ["master_engineering_technical"],
                "organization": {"name": "US Navy", "phone": "+1-555-0100"}
            }],
            "pagination": {"page": 1, "per_page": 5, "total_entries": 1, "total_pages": 1}
        }))
        .into_response()
    }
    let base = serve(
        axum::Router::new()
            .route("/api/v1/mixed_people/api_search", post(search))
            .with_state(seen.clone()),
    )
    .await;
    let apollo = || -> Arc<dyn Directory> {
        Arc::new(Apollo::new("apollo-key", Some(&base), &loopback()).unwrap())
    };
    let (outcome, events) = call(
        vec![apollo()],
        None,
        "p",
        json!({"queries": ["compiler pioneer"], "title": "admiral", "location": "Virginia", "company": "Navy"}),
    )
    .await;
    assert_private(&everything(&outcome, &events));
    let results = results(&outcome);
    assert_eq!(results[0]["title"], "Grace Hopper — Rear Admiral, US Navy");
    assert_eq!(results[0]["url"], "http://www.linkedin.com/in/grace");
    let snippet = results[0]["snippet"].as_str().unwrap();
    assert!(
        snippet.contains("Department: engineering technical"),
        "{snippet}"
    );
    assert!(
        snippet.contains("Arlington, Virginia, United States"),
        "{snippet}"
    );
    let (headers, body) = seen.lock().unwrap()[0].clone();
    assert_eq!(headers["x-api-key"], "apollo-key");
    assert_eq!(body["person_titles"], json!(["admiral"]));
    assert_eq!(body["person_locations"], json!(["Virginia"]));
    assert_eq!(body["q_keywords"], "compiler pioneer Navy");
    assert_eq!(body["per_page"], 5);

    let (slow, _) = call(vec![apollo()], None, "p", json!({"queries": ["slow"]})).await;
    assert!(
        slow.model_text.contains("rate limited"),
        "{}",
        slow.model_text
    );
}

#[tokio::test]
async fn github_reads_profiles_from_its_own_base_and_never_follows_hit_urls() {
    let followed = Arc::new(Mutex::new(0_u32));
    let counter = followed.clone();
    let seen: Arc<Mutex<Vec<HashMap<String, String>>>> = Arc::default();
    let queries = seen.clone();
    let router = axum::Router::new()
        .route(
            "/search/users",
            get(move |Query(params): Query<HashMap<String, String>>, headers: HeaderMap| {
                let queries = queries.clone();
                async move {
                    queries.lock().unwrap().push(params.clone());
                    if params["q"].contains("limited") {
                        return (StatusCode::FORBIDDEN, [("x-ratelimit-remaining", "0")], axum::Json(json!({"message": "API rate limit exceeded for 127.0.0.1.", "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}))).into_response();
                    }
                    assert_eq!(headers["authorization"], "Bearer gh-token");
                    assert_eq!(headers["x-github-api-version"], "2022-11-28");
                    axum::Json(json!({"total_count": 2, "incomplete_results": false, "items": [
                        {"login": "octo-ada", "id": 1, "url": "http://127.0.0.1:9/evil", "html_url": "https://github.com/octo-ada", "type": "User", "score": 1.0},
                        {"login": "../admin", "id": 2, "url": "http://127.0.0.1:9/evil", "type": "User", "score": 0.5}
                    ]})).into_response()
                }
            }),
        )
        .route(
            "/users/{login}",
            get(|Path(login): Path<String>| async move {
                axum::Json(json!({
                    "login": login, "id": 1, "name": "Ada Octo", "company": "@analytical",
                    "blog": "https://ada.example/blog", "location": "Berlin",
                    "email": "ada.private@example.com", "bio": "Loves long walks",
                    "twitter_username": "twitter-ada", "html_url": "http://169.254.169.254/latest/meta-data",
                    "updated_at": "2025-02-03T04:05:06Z"
                }))
            }),
        )
        .route(
            "/evil",
            get(move || {
                *counter.lock().unwrap() += 1;
                async { "secret" }
            }),
        );
    let base = serve(router).await;
    let github = || -> Arc<dyn Directory> {
        Arc::new(GitHub::new(Some("gh-token"), Some(&base), &loopback()).unwrap())
    };
    let (outcome, events) = call(
        vec![github()],
        None,
        "p",
        json!({"queries": ["compiler engineer"], "location": "Berlin", "skill": "rust"}),
    )
    .await;
    assert_private(&everything(&outcome, &events));
    let results = results(&outcome);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["title"], "Ada Octo — analytical");
    // The profile's metadata-address URL is refused by the guard: the record keeps a URN.
    assert_eq!(results[0]["url"], "urn:agentd:people:github:1");
    assert_eq!(results[0]["last_updated"], "2025-02-03");
    assert_eq!(*followed.lock().unwrap(), 0, "a hit's url was followed");
    let q = seen.lock().unwrap()[0]["q"].clone();
    assert_eq!(
        q,
        "compiler engineer language:rust location:Berlin type:user"
    );

    let (limited, _) = call(vec![github()], None, "p", json!({"queries": ["limited"]})).await;
    assert!(
        limited.model_text.contains("rate limited"),
        "{}",
        limited.model_text
    );
}

#[tokio::test]
async fn orcid_expanded_search() {
    let seen: SeenQueries = Arc::default();
    let record = seen.clone();
    let router = axum::Router::new().route(
        "/v3.0/expanded-search/",
        get(move |headers: HeaderMap, Query(params): Query<HashMap<String, String>>| {
            let record = record.clone();
            async move {
                record.lock().unwrap().push((headers, params.clone()));
                if params["q"].contains("broken") {
                    return (StatusCode::BAD_REQUEST, axum::Json(json!({"response-code": 400, "developer-message": "Invalid query", "error-code": 9999}))).into_response();
                }
                axum::Json(json!({"expanded-result": [
                    {"orcid-id": "0000-0002-1825-0097", "given-names": "Josiah", "family-names": "Carberry",
                     "credit-name": null, "other-name": ["J. Carberry"], "email": ["ada.private@example.com"],
                     "institution-name": ["Brown University", "Wesleyan University"]},
                    {"orcid-id": "not-an-id", "given-names": "Bad", "family-names": "Id"}
                ], "num-found": 2})).into_response()
            }
        }),
    );
    let base = serve(router).await;
    let orcid =
        || -> Arc<dyn Directory> { Arc::new(Orcid::new(Some(&base), &loopback()).unwrap()) };
    let (outcome, events) = call(
        vec![orcid()],
        None,
        "p",
        json!({"queries": ["psychoceramics"], "school": "Brown"}),
    )
    .await;
    assert_private(&everything(&outcome, &events));
    let results = results(&outcome);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["title"], "Josiah Carberry — Brown University");
    assert_eq!(results[0]["url"], "https://orcid.org/0000-0002-1825-0097");
    let (headers, params) = seen.lock().unwrap()[0].clone();
    assert_eq!(headers["accept"], "application/json");
    assert_eq!(
        params["q"],
        "(\"psychoceramics\") AND affiliation-org-name:\"Brown\""
    );
    assert_eq!(params["rows"], "5");

    let (broken, _) = call(vec![orcid()], None, "p", json!({"queries": ["broken"]})).await;
    assert!(
        broken.model_text.contains("HTTP 400: Invalid query"),
        "{}",
        broken.model_text
    );
}

/// A SCIM user whose profile URL is `url`, with every sensitive attribute filled in.
fn scim_user(id: &str, name: &str, url: &str, active: bool) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User",
                    "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
        "id": id, "userName": "ada@work.example", "displayName": name, "active": active,
        "name": {"givenName": "Ada", "familyName": "Lovelace", "formatted": "Ada Lovelace"},
        "title": "Staff Engineer", "profileUrl": url, "nickName": "twitter-ada",
        "emails": [{"value": "ada@work.example", "type": "work", "primary": true},
                   {"value": "ada.private@example.com", "type": "home"}],
        "phoneNumbers": [{"value": "+1-555-0100", "type": "mobile"}],
        "addresses": [{"streetAddress": "12 Secret Lane", "locality": "London", "region": "England",
                       "postalCode": "SW1A 1AA", "country": "GB", "type": "home"}],
        "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {
            "employeeNumber": "123-45-6789", "organization": "Engines Ltd", "department": "R&D",
            "manager": {"value": "m1", "displayName": "Loves long walks"}
        },
        "meta": {"resourceType": "User", "lastModified": "2025-04-05T06:07:08Z"}
    })
}

#[tokio::test]
async fn scim_users_filters_errors_and_every_returned_url_through_the_guard() {
    let seen: SeenQueries = Arc::default();
    let record = seen.clone();
    let urls = [
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:8080/admin",
        "http://[::ffff:127.0.0.1]/",
        "http://2130706433/",
        "http://10.0.0.5/people/1",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "https://intranet.example/people/ada",
    ];
    let users: Vec<Value> = urls
        .iter()
        .enumerate()
        .map(|(i, url)| scim_user(&format!("u{i}"), &format!("Ada {i}"), url, true))
        .chain([scim_user("gone", "Ada Gone", "https://x.example/", false)])
        .collect();
    let router = axum::Router::new().route(
        "/scim/v2/Users",
        get(move |headers: HeaderMap, Query(params): Query<HashMap<String, String>>| {
            let record = record.clone();
            let users = users.clone();
            async move {
                record.lock().unwrap().push((headers, params.clone()));
                if params["filter"].contains("broken") {
                    return (StatusCode::BAD_REQUEST, axum::Json(json!({
                        "schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"],
                        "scimType": "invalidFilter", "detail": "Unsupported filter operator", "status": "400"}))).into_response();
                }
                if params["filter"].contains("throttle") {
                    return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "5")], "slow down").into_response();
                }
                axum::Json(json!({
                    "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
                    "totalResults": users.len(), "itemsPerPage": users.len(), "startIndex": 1,
                    "Resources": users
                })).into_response()
            }
        }),
    );
    let base = serve(router).await;
    let scim = || -> Arc<dyn Directory> {
        Arc::new(Scim::new(&format!("{base}/scim/v2"), "scim-token", &loopback()).unwrap())
    };
    let (outcome, events) = call(
        vec![scim()],
        None,
        "p",
        json!({"queries": ["ada"], "limit": 10}),
    )
    .await;
    assert_private(&everything(&outcome, &events));
    let results = results(&outcome);
    assert_eq!(
        results.len(),
        urls.len(),
        "the inactive user is left out: {results:?}"
    );
    let shown: Vec<&str> = results.iter().map(|r| r["url"].as_str().unwrap()).collect();
    let mut expected: Vec<String> = (0..7)
        .map(|i| format!("urn:agentd:people:scim:u{i}"))
        .collect();
    expected.push("https://intranet.example/people/ada".to_owned());
    assert_eq!(shown, expected);
    for result in &results {
        assert_eq!(result["last_updated"], "2025-04-05");
        let snippet = result["snippet"].as_str().unwrap();
        assert!(
            snippet.contains("Department: R&D. Location: London, England, GB"),
            "{snippet}"
        );
    }
    assert_eq!(results[0]["title"], "Ada 0 — Staff Engineer, Engines Ltd");
    for source in &outcome.sources {
        assert!(!source.url.contains("169.254") && !source.url.contains("127.0.0.1"));
    }

    let (headers, params) = seen.lock().unwrap()[0].clone();
    assert_eq!(headers["authorization"], "Bearer scim-token");
    assert_eq!(
        params["filter"],
        "(displayName co \"ada\" or title co \"ada\" or name.familyName co \"ada\")"
    );
    assert_eq!(params["count"], "10");
    let attributes = &params["attributes"];
    for never in [
        "emails",
        "phoneNumbers",
        "userName",
        "streetAddress",
        "postalCode",
    ] {
        assert!(!attributes.contains(never), "{attributes}");
    }

    let (broken, _) = call(vec![scim()], None, "p", json!({"queries": ["broken"]})).await;
    assert!(
        broken
            .model_text
            .contains("HTTP 400: Unsupported filter operator"),
        "{}",
        broken.model_text
    );
    let (throttled, _) = call(vec![scim()], None, "p", json!({"queries": ["throttle"]})).await;
    assert!(
        throttled.model_text.contains("retry after 5 s"),
        "{}",
        throttled.model_text
    );
}

#[tokio::test]
async fn the_embedded_directory_is_per_project_and_ranks_names_first() {
    let directory = LocalDirectory::in_memory().await.unwrap();
    let csv = "id,name,title,company,department,location,skills,summary,profile_url,email,phone\n\
        1,Marie Curie,Physicist,Institut du Radium,Research,Paris,radioactivity; chemistry,Two Nobel prizes,https://people.example/marie,ada.private@example.com,+1-555-0100\n\
        2,Pierre Dupont,Engineer,Acme,Ops,Paris,kubernetes,Worked with Marie on tooling,,,\n\
        3,Ada Byron,Engineer,Acme,Platform,London,rust,Call +1-555-0100 or ada.private@example.com,,,\n";
    let rows = people::import::read_csv("people.csv", csv.as_bytes(), &[]).unwrap();
    directory
        .import("project-a", &rows.people, false)
        .await
        .unwrap();
    let other =
        people::import::read_csv("o.csv", b"name,title\nMarie Other,Secret Agent\n", &[]).unwrap();
    directory
        .import("project-b", &other.people, false)
        .await
        .unwrap();

    let (outcome, events) = call(
        Vec::new(),
        Some(directory.clone()),
        "project-a",
        json!({"queries": ["marie"]}),
    )
    .await;
    assert_private(&everything(&outcome, &events));
    let found = results(&outcome);
    let titles: Vec<&str> = found.iter().map(|r| r["title"].as_str().unwrap()).collect();
    // The name match outranks the summary match; project-b's Marie is not seen.
    assert_eq!(
        titles,
        [
            "Marie Curie — Physicist, Institut du Radium",
            "Pierre Dupont — Engineer, Acme"
        ]
    );
    assert_eq!(found[0]["url"], "https://people.example/marie");
    assert_eq!(found[1]["url"], "urn:agentd:people:directory:2");

    let (hinted, _) = call(
        Vec::new(),
        Some(directory.clone()),
        "project-a",
        json!({"queries": ["engineer"], "location": "London", "skill": "rust"}),
    )
    .await;
    let titles: Vec<String> = results_titles(&hinted);
    assert_eq!(titles, ["Ada Byron — Engineer, Acme"]);
    let snippet = results(&hinted)[0]["snippet"].as_str().unwrap().to_owned();
    assert_eq!(
        snippet,
        "Department: Platform. Location: London. Skills: rust. Call or. Source: directory"
    );

    let (empty, _) = call(
        Vec::new(),
        Some(directory),
        "project-c",
        json!({"queries": ["marie"]}),
    )
    .await;
    assert!(results(&empty).is_empty());
}

fn results_titles(outcome: &ToolOutcome) -> Vec<String> {
    results(outcome)
        .iter()
        .map(|r| r["title"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn one_failing_source_is_a_note_and_the_others_answer() {
    let directory = LocalDirectory::in_memory().await.unwrap();
    let rows =
        people::import::read_csv("p.csv", b"name,title\nLise Meitner,Physicist\n", &[]).unwrap();
    directory.import("p", &rows.people, false).await.unwrap();
    // Nothing listens on port 9 of loopback.
    let down: Arc<dyn Directory> =
        Arc::new(Pdl::new("k", Some("http://127.0.0.1:9"), &loopback()).unwrap());
    let (outcome, _) = call(
        vec![down],
        Some(directory),
        "p",
        json!({"queries": ["physicist", "meitner"]}),
    )
    .await;
    assert_eq!(results_titles(&outcome), ["Lise Meitner — Physicist"]);
    assert!(
        outcome.model_text.contains("Note: the pdl source failed"),
        "{}",
        outcome.model_text
    );
    assert_eq!(outcome.invocations, vec![("search_people".to_owned(), 2)]);
}

#[tokio::test]
async fn configured_extra_columns_are_stored_searched_and_shown() {
    let directory = LocalDirectory::in_memory().await.unwrap();
    let csv = b"name,title,team,home_phone\nAnnie Easley,Programmer,Centaur rocket (ext. +1-555-0100),+1-555-0100\n";
    let rows = people::import::read_csv("p.csv", csv, &["team".to_owned()]).unwrap();
    directory.import("p", &rows.people, false).await.unwrap();
    let (outcome, events) = call(
        Vec::new(),
        Some(directory),
        "p",
        json!({"queries": ["centaur"]}),
    )
    .await;
    assert_private(&everything(&outcome, &events));
    let found = results(&outcome);
    assert_eq!(found[0]["title"], "Annie Easley — Programmer");
    assert_eq!(
        found[0]["snippet"],
        "team: Centaur rocket (ext.). Source: directory"
    );
}
