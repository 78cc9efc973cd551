//! The LDAP back end against a real OpenLDAP server (Debian's `slapd`, which `.ci/run`
//! installs), started by the test on a free loopback port with a database loaded by
//! `slapadd`: attribute mapping, the allow list (the server is never asked for mail,
//! phones or addresses), filter injection, binds and ranking.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::hosted::{CallContext, EventSink, HostedTool, NoFiles, ToolOutcome};
use netguard::Policy;
use people::{Directory, Ldap, LdapSettings, People, PeopleSearch};
use protocol::events::EventData;
use serde_json::{Value, json};

const SUFFIX: &str = "dc=example,dc=org";
const ADMIN: &str = "cn=admin,dc=example,dc=org";
const PASSWORD: &str = "test-secret";

/// A slapd of the test's own, killed on drop.
struct Slapd {
    child: Child,
    url: String,
    dir: PathBuf,
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const DATA: &str = "\
dn: dc=example,dc=org
objectClass: dcObject
objectClass: organization
o: Example
dc: example

dn: ou=people,dc=example,dc=org
objectClass: organizationalUnit
ou: people

dn: uid=ada,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: ada
cn: Ada Lovelace
sn: Lovelace
givenName: Ada
displayName: Ada Lovelace
title: Staff Engineer
o: Analytical Engines
ou: Platform
l: London
st: England
labeledURI: https://intranet.example/people/ada Ada's page
mail: ada.private@example.com
telephoneNumber: +1-555-0100
mobile: +1-555-0100
homePostalAddress: 12 Secret Lane$London
street: 12 Secret Lane
postalCode: SW1A 1AA
employeeNumber: 123-45-6789
description: Loves long walks

dn: uid=grace,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: grace
cn: Grace Hopper
sn: Hopper
title: Engineer
o: Navy
ou: Compilers
l: Arlington
labeledURI: http://169.254.169.254/latest/meta-data/

dn: uid=bob,ou=people,dc=example,dc=org
objectClass: inetOrgPerson
uid: bob
cn: Bob Builder
sn: Builder
title: Site Manager
l: London
";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_slapd() -> Slapd {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "agentd-slapd-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("db")).unwrap();
    let conf = format!(
        "include /etc/ldap/schema/core.schema\n\
         include /etc/ldap/schema/cosine.schema\n\
         include /etc/ldap/schema/inetorgperson.schema\n\
         modulepath /usr/lib/ldap\n\
         moduleload back_mdb\n\
         pidfile {dir}/slapd.pid\n\
         database mdb\n\
         maxsize 10485760\n\
         suffix \"{SUFFIX}\"\n\
         rootdn \"{ADMIN}\"\n\
         rootpw {PASSWORD}\n\
         directory {dir}/db\n",
        dir = dir.display()
    );
    std::fs::write(dir.join("slapd.conf"), conf).unwrap();
    std::fs::write(dir.join("data.ldif"), DATA).unwrap();
    let loaded = Command::new(binary("slapadd"))
        .arg("-f")
        .arg(dir.join("slapd.conf"))
        .arg("-l")
        .arg(dir.join("data.ldif"))
        .output()
        .unwrap();
    assert!(
        loaded.status.success(),
        "slapadd: {}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    let port = free_port();
    let url = format!("ldap://127.0.0.1:{port}");
    let child = Command::new(binary("slapd"))
        .arg("-f")
        .arg(dir.join("slapd.conf"))
        .arg("-h")
        .arg(format!("{url}/"))
        // Debug level 0 keeps slapd in the foreground (a child we can kill).
        .args(["-d", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let slapd = Slapd { child, url, dir };
    // Ready once it accepts connections (bounded).
    let ready = (0..200).any(|_| {
        let up = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        if !up {
            std::thread::sleep(Duration::from_millis(50));
        }
        up
    });
    assert!(ready, "slapd did not start listening on {}", slapd.url);
    slapd
}

/// The OpenLDAP tools live in /usr/sbin, which may not be on a test's PATH.
fn binary(name: &str) -> PathBuf {
    let sbin = Path::new("/usr/sbin").join(name);
    if sbin.is_file() {
        sbin
    } else {
        PathBuf::from(name)
    }
}

struct Events(Mutex<Vec<EventData>>);

impl EventSink for Events {
    fn emit(&self, event: EventData) {
        self.0.lock().unwrap().push(event);
    }
}

fn settings(url: &str, password: Option<&str>) -> LdapSettings {
    LdapSettings {
        url: url.to_owned(),
        base_dn: format!("ou=people,{SUFFIX}"),
        bind_dn: password.map(|_| ADMIN.to_owned()),
        bind_password: password.map(str::to_owned),
        object_filter: Some("(objectClass=inetOrgPerson)".to_owned()),
        starttls: false,
        timeout: Some(Duration::from_secs(10)),
    }
}

async fn call(ldap: Ldap, arguments: Value) -> (ToolOutcome, String) {
    let directories: Vec<Arc<dyn Directory>> = vec![Arc::new(ldap)];
    let people = Arc::new(People::with_directories(
        directories,
        None,
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
                project_id: "p",
                files: &NoFiles,
            },
        )
        .await;
    let everything = format!(
        "{}\n{}\n{}",
        outcome.model_text,
        serde_json::to_string(&outcome.items).unwrap(),
        serde_json::to_string(&*events.0.lock().unwrap()).unwrap()
    );
    (outcome, everything)
}

fn titles(outcome: &ToolOutcome) -> Vec<String> {
    let items = serde_json::to_value(&outcome.items).unwrap();
    items[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["title"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn ldap_searches_a_real_directory() {
    let slapd = start_slapd();

    // Bound as the reader: the words rank Ada (two matches) above Grace (one).
    let ldap = Ldap::new(settings(&slapd.url, Some(PASSWORD))).unwrap();
    let (outcome, everything) = call(ldap, json!({"queries": ["ada engineer"]})).await;
    for secret in [
        "ada.private@example.com",
        // The phone number in either spelling (not "555" alone: the answer's random ids,
        // hex digits, hold it now and then).
        "555-0100",
        "5550100",
        "Secret Lane",
        "SW1A",
        "123-45-6789",
        "Loves long walks",
    ] {
        assert!(
            !everything.contains(secret),
            "{secret} leaked: {everything}"
        );
    }
    assert_eq!(
        titles(&outcome),
        [
            "Ada Lovelace — Staff Engineer, Analytical Engines",
            "Grace Hopper — Engineer, Navy"
        ]
    );
    let items = serde_json::to_value(&outcome.items).unwrap();
    let ada = &items[0]["results"][0];
    assert_eq!(ada["url"], "https://intranet.example/people/ada");
    assert_eq!(
        ada["snippet"],
        "Department: Platform. Location: London, England. Source: ldap"
    );
    assert!(ada["last_updated"].as_str().unwrap().len() == 10, "{ada}");
    // Grace's profile URL is the metadata address: refused, a URN instead.
    let grace = items[0]["results"][1]["url"].as_str().unwrap();
    assert!(grace.starts_with("urn:agentd:people:ldap:"), "{grace}");

    // Anonymous, with a location hint.
    let anonymous = Ldap::new(settings(&slapd.url, None)).unwrap();
    let (outcome, _) = call(
        anonymous,
        json!({"queries": ["manager"], "location": "London"}),
    )
    .await;
    assert_eq!(titles(&outcome), ["Bob Builder — Site Manager"]);

    // A hint written as filter syntax is matched as text: nothing has that title.
    let injected = Ldap::new(settings(&slapd.url, None)).unwrap();
    let (outcome, _) = call(
        injected,
        json!({"queries": ["engineer"], "title": "*)(objectClass=*))(|(cn=*"}),
    )
    .await;
    assert_eq!(titles(&outcome), Vec::<String>::new());
    assert!(
        outcome.model_text.starts_with("No people found"),
        "{}",
        outcome.model_text
    );

    // A wrong password is an error for the model, without the password.
    let wrong = Ldap::new(settings(&slapd.url, Some("nope"))).unwrap();
    let (outcome, _) = call(wrong, json!({"queries": ["ada"]})).await;
    assert!(
        outcome
            .model_text
            .starts_with("people_search failed (ldap: LDAP:"),
        "{}",
        outcome.model_text
    );
    assert!(
        !outcome.model_text.contains("nope"),
        "{}",
        outcome.model_text
    );
    drop(slapd);
}
