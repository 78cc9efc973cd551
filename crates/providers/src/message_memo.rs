//! The JSON an adapter wrote for the messages of its last requests, kept for the next request
//! that begins with the same messages.
//!
//! A model is sent the whole conversation at every turn: a chained or stateless client's
//! next turn, and each step of an agent's run after a tool call, repeat every message of the
//! request before and add a few. Writing them again is escaping all their text again: at the
//! 125th turn of a conversation of 1 KB questions, 0.58 M of a turn's 2.25 M instructions
//! (docs/benchmarks.md, "Issue 18, thirty-sixth pass"). Here the JSON written for a request's
//! messages is kept with the messages themselves; a request whose first messages are equal to
//! those of a kept one takes their JSON as it is and writes only the rest.
//!
//! It is a memo of the writing and nothing more: a message's JSON is taken only for a message
//! equal to the one it was written from (`==` on the whole [`ModelMessage`], every field, not
//! a hash), so the bytes sent are those the adapter would write, whoever's conversation shares
//! the entry. Entries are found by the first two messages (a keyed hash of them: the
//! conversation's instructions and first question, which its later turns begin with too); a
//! request that goes on from an entry takes it out while it writes and puts it back grown by
//! its new messages, so a turn copies only what it adds. Two requests that find the same
//! entry at once: the second writes everything, as without the memo.
//!
//! The Chat Completions and Responses adapters keep one each: there every message of the
//! engine's becomes values of the list that depend on that message alone. Anthropic's and
//! Gemini's merge consecutive messages of a role into one turn (a turn's JSON depends on its
//! neighbours), so a message's JSON is not its own there; they write every turn.
//!
//! Bounded: [`BUDGET_BYTES`] in all, each entry counted as twice its JSON (the messages kept
//! take about as much) and [`PER_MESSAGE`] more per message; the entries used least recently
//! go first. Requests whose messages are shorter than [`MIN_BYTES`] are written without it
//! (keeping them would cost about what writing them again does), and no entry is kept over
//! [`MAX_ENTRY`]: a request whose messages outgrow it is written as without the memo from
//! there on, its messages neither copied nor cloned.

use std::hash::BuildHasher;

use engine::budget_map::BudgetMap;
use engine::model::ModelMessage;
use foldhash::fast::RandomState;

/// The most the memo holds (see [`Entry::cost`]).
pub(crate) const BUDGET_BYTES: usize = 8 << 20;

/// The most one entry may count (see [`Entry::cost`]): a request whose messages would count
/// more is written without the memo.
const MAX_ENTRY: usize = BUDGET_BYTES / 8;

/// Messages whose JSON is estimated below this are written without the memo.
pub(crate) const MIN_BYTES: usize = 2 << 10;

/// What a kept message counts beyond its text: the message, its clone's allocations and its
/// end in the JSON.
const PER_MESSAGE: usize = 128;

/// See the module documentation. One per adapter instance, shared by its requests.
pub(crate) struct MessageMemo {
    /// By the keyed hash of the first two messages.
    entries: BudgetMap<u64, Entry>,
    /// The key's hasher, seeded at random (foldhash: a system prompt of tens of KB, first of
    /// every request, is hashed at a fraction of SipHash's cost).
    hasher: RandomState,
}

impl std::fmt::Debug for MessageMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageMemo")
            .field("entries", &self.entries)
            .finish()
    }
}

impl Default for MessageMemo {
    fn default() -> Self {
        MessageMemo {
            entries: BudgetMap::new(BUDGET_BYTES),
            hasher: RandomState::default(),
        }
    }
}

/// Writes message `i` into the list begun at `start` of `out`: a `,` first when the list holds
/// something and the message writes something.
fn write_one(
    out: &mut String,
    start: usize,
    i: usize,
    write: &mut impl FnMut(&mut String, usize) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error> {
    let before = out.len();
    if before > start {
        out.push(',');
    }
    let from = out.len();
    write(out, i)?;
    if out.len() == from {
        out.truncate(before);
    }
    Ok(())
}

/// The messages of a request written last, and their JSON.
#[derive(Default)]
struct Entry {
    /// The messages, as the adapter was given them.
    messages: Vec<ModelMessage>,
    /// Their JSON list without its brackets: message `i` is `json[ends[i - 1]..ends[i]]`, a
    /// `,` before each that wrote something after something.
    json: String,
    ends: Vec<usize>,
}

impl Entry {
    fn cost(&self) -> usize {
        2 * self.json.len() + PER_MESSAGE * self.messages.len()
    }
}

impl MessageMemo {
    /// Writes a JSON list of what `messages` become into `out`, `write(out, i)` writing what
    /// message `i` becomes on its own: nothing, or one or more values with a `,` between. The
    /// same bytes as writing each of them (`[`, every value with a `,` between, `]`), those of
    /// the first messages equal to a kept request's taken from it. What a message becomes must
    /// depend on that message alone. `size` is an estimate of the list's length (below
    /// [`MIN_BYTES`] the memo is left out).
    pub(crate) fn write_list(
        &self,
        out: &mut String,
        messages: &[&ModelMessage],
        size: usize,
        mut write: impl FnMut(&mut String, usize) -> Result<(), serde_json::Error>,
    ) -> Result<(), serde_json::Error> {
        if size < MIN_BYTES || messages.is_empty() {
            out.push('[');
            let start = out.len();
            for i in 0..messages.len() {
                write_one(out, start, i, &mut write)?;
            }
            out.push(']');
            return Ok(());
        }
        let key = self.hasher.hash_one((messages.first(), messages.get(1)));
        let mut entry = self.entries.remove(&key).unwrap_or_default();
        let same = entry
            .messages
            .iter()
            .zip(messages)
            .take_while(|(kept, message)| kept == *message)
            .count();
        entry.messages.truncate(same);
        entry.ends.truncate(same);
        entry.json.truncate(entry.ends.last().copied().unwrap_or(0));

        out.push('[');
        let start = out.len();
        out.push_str(&entry.json);
        let written_from = out.len();
        // Kept while it would not outgrow an entry's share of the budget: past that, the
        // messages are written as without the memo, neither copied nor cloned (the size given is
        // an estimate, and a part such as an image's data URL is not in it).
        let mut keep = true;
        for (i, message) in messages.iter().enumerate().skip(same) {
            write_one(out, start, i, &mut write)?;
            let listed = out.len() - start;
            if keep && 2 * listed + PER_MESSAGE * (i + 1) > MAX_ENTRY {
                keep = false;
                entry = Entry::default();
            }
            if keep {
                entry.ends.push(listed);
                entry.messages.push((*message).clone());
            }
        }
        if keep {
            entry
                .json
                .push_str(out.get(written_from..).unwrap_or_default());
            let cost = entry.cost();
            self.entries.insert(key, entry, cost);
        }
        out.push(']');
        Ok(())
    }

    /// How many entries and bytes are kept (for the tests).
    #[cfg(test)]
    fn size(&self) -> (usize, usize) {
        self.entries.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> ModelMessage {
        ModelMessage::User {
            content: vec![engine::model::ContentPart::Text { text: text.into() }],
        }
    }

    fn assistant(text: &str) -> ModelMessage {
        ModelMessage::Assistant {
            content: Some(text.into()),
            tool_calls: vec![],
        }
    }

    /// Each message written as its text, quoted by serde; the indexes written are recorded.
    fn written(memo: &MessageMemo, messages: &[ModelMessage], size: usize) -> (String, Vec<usize>) {
        let refs: Vec<&ModelMessage> = messages.iter().collect();
        let mut out = String::from("{\"messages\":");
        let mut calls = Vec::new();
        memo.write_list(&mut out, &refs, size, |out, i| {
            calls.push(i);
            protocol::push_json(out, &refs[i])
        })
        .expect("written");
        out.push('}');
        (out, calls)
    }

    fn serde_list(messages: &[ModelMessage]) -> String {
        format!(
            "{{\"messages\":{}}}",
            serde_json::to_string(messages).expect("serde writes it")
        )
    }

    fn long(n: usize, word: &str) -> String {
        format!("{n}: {}", word.repeat(400))
    }

    #[test]
    fn a_conversation_going_on_writes_only_its_new_messages_and_the_same_bytes() {
        let memo = MessageMemo::default();
        let mut conversation = vec![
            ModelMessage::System {
                content: "Be \"brief\".\n".into(),
            },
            user(&long(0, "question é ")),
        ];
        let (first, calls) = written(&memo, &conversation, MIN_BYTES);
        assert_eq!(first, serde_list(&conversation));
        assert_eq!(calls, [0, 1]);
        for turn in 1..6 {
            conversation.push(assistant(&long(turn, "answer\t")));
            conversation.push(user(&long(turn, "next ")));
            let (body, calls) = written(&memo, &conversation, MIN_BYTES);
            assert_eq!(body, serde_list(&conversation), "turn {turn}");
            // Only the two messages the turn added were written.
            let n = conversation.len();
            assert_eq!(calls, [n - 2, n - 1], "turn {turn}");
        }
        assert_eq!(memo.size().0, 1);
    }

    #[test]
    fn a_message_that_differs_is_written_again_with_everything_after_it() {
        let memo = MessageMemo::default();
        let conversation = vec![
            user(&long(0, "q ")),
            assistant(&long(0, "a ")),
            user(&long(1, "q ")),
            assistant(&long(1, "a ")),
            user(&long(2, "q ")),
        ];
        written(&memo, &conversation, MIN_BYTES);
        // The third message edited (one byte), and a tool call added to the fourth: each is
        // written again from there on, never taken from the memo.
        let mut edited = conversation.clone();
        edited[2] = user(&long(1, "Q "));
        let (body, calls) = written(&memo, &edited, MIN_BYTES);
        assert_eq!(body, serde_list(&edited));
        assert_eq!(calls, [2, 3, 4]);
        let mut called = edited.clone();
        called[3] = ModelMessage::Assistant {
            content: Some(long(1, "a ")),
            tool_calls: vec![engine::model::ToolCall {
                id: "call_1".into(),
                name: "lookup".into(),
                arguments: "{}".into(),
                thought_signature: None,
            }],
        };
        let (body, calls) = written(&memo, &called, MIN_BYTES);
        assert_eq!(body, serde_list(&called));
        assert_eq!(calls, [3, 4]);
        // Shorter than what is kept: nothing to write.
        let (body, calls) = written(&memo, &called[..3], MIN_BYTES);
        assert_eq!(body, serde_list(&called[..3]));
        assert!(calls.is_empty(), "{calls:?}");
        // Going back to the edit's own third message writes from there again.
        let (body, calls) = written(&memo, &edited, MIN_BYTES);
        assert_eq!(body, serde_list(&edited));
        assert_eq!(calls, [3, 4]);
    }

    #[test]
    fn conversations_that_share_their_instructions_each_keep_their_own() {
        let memo = MessageMemo::default();
        let instructions = ModelMessage::System {
            content: long(0, "You are helpful. "),
        };
        let mut chats: Vec<Vec<ModelMessage>> = (0..3)
            .map(|n| vec![instructions.clone(), user(&long(n, "hello "))])
            .collect();
        for chat in &chats {
            written(&memo, chat, MIN_BYTES);
        }
        for (n, chat) in chats.iter_mut().enumerate() {
            chat.push(assistant(&long(n, "hi ")));
            chat.push(user(&long(n, "more ")));
            let (body, calls) = written(&memo, chat, MIN_BYTES);
            assert_eq!(body, serde_list(chat));
            assert_eq!(calls, [2, 3], "chat {n}");
        }
        assert_eq!(memo.size().0, 3);
    }

    /// Messages that become nothing (a reasoning block here) or several values (a tool call's
    /// turn here: its text and its calls), first, last and between: the list is every value
    /// with a `,` between, with the memo and without it.
    #[test]
    fn messages_that_become_no_value_or_several_leave_a_well_formed_list() {
        let reasoning = ModelMessage::Reasoning(engine::model::Reasoning::default());
        let call = ModelMessage::Assistant {
            content: Some(long(1, "calling ")),
            tool_calls: vec![engine::model::ToolCall {
                id: "call_1".into(),
                name: "lookup".into(),
                arguments: "{}".into(),
                thought_signature: None,
            }],
        };
        let values = |messages: &[ModelMessage]| -> Vec<serde_json::Value> {
            messages
                .iter()
                .flat_map(|message| match message {
                    ModelMessage::Reasoning(_) => vec![],
                    ModelMessage::Assistant {
                        content,
                        tool_calls,
                    } if !tool_calls.is_empty() => {
                        vec![serde_json::json!(content), serde_json::json!(tool_calls)]
                    }
                    message => vec![serde_json::json!(message)],
                })
                .collect()
        };
        let memo = MessageMemo::default();
        let mut conversation = vec![reasoning.clone(), user(&long(0, "q ")), reasoning.clone()];
        for turn in 0..3 {
            conversation.extend([call.clone(), reasoning.clone(), user(&long(turn, "next "))]);
            for size in [MIN_BYTES - 1, MIN_BYTES] {
                let refs: Vec<&ModelMessage> = conversation.iter().collect();
                let mut out = String::new();
                let mut calls = Vec::new();
                memo.write_list(&mut out, &refs, size, |out, i| {
                    calls.push(i);
                    match refs[i] {
                        ModelMessage::Reasoning(_) => Ok(()),
                        ModelMessage::Assistant {
                            content,
                            tool_calls,
                        } if !tool_calls.is_empty() => {
                            protocol::push_json(out, content)?;
                            out.push(',');
                            protocol::push_json(out, tool_calls)
                        }
                        message => protocol::push_json(out, message),
                    }
                })
                .expect("written");
                let read: serde_json::Value = serde_json::from_str(&out).expect("a JSON list");
                assert_eq!(
                    read,
                    serde_json::json!(values(&conversation)),
                    "turn {turn}"
                );
                if size == MIN_BYTES && turn > 0 {
                    let n = conversation.len();
                    assert_eq!(calls, [n - 3, n - 2, n - 1], "turn {turn}");
                }
            }
        }
        // Nothing but messages that become nothing.
        let mut out = String::new();
        memo.write_list(
            &mut out,
            &[&reasoning, &reasoning],
            MIN_BYTES,
            |_, _| Ok(()),
        )
        .expect("written");
        assert_eq!(out, "[]");
    }

    #[test]
    fn short_requests_pass_it_by_and_what_it_keeps_is_bounded() {
        let memo = MessageMemo::default();
        let short = vec![user("hi")];
        let (body, calls) = written(&memo, &short, MIN_BYTES - 1);
        assert_eq!(body, serde_list(&short));
        assert_eq!(calls, [0]);
        assert_eq!(memo.size(), (0, 0));
        let (body, calls) = written(&memo, &[], MIN_BYTES);
        assert_eq!(body, serde_list(&[]));
        assert!(calls.is_empty());
        assert_eq!(memo.size(), (0, 0));

        // A conversation kept, then grown past an entry's share by a message its estimate did
        // not count (the size given stays small): every body is still serde's, and nothing is
        // kept of it any more, so its next turn writes every message again.
        let mut growing = vec![user(&long(0, "q ")), user(&long(1, "q "))];
        let (_, calls) = written(&memo, &growing, MIN_BYTES);
        assert_eq!(calls, [0, 1]);
        assert_eq!(memo.size().0, 1);
        growing.push(user(&"z".repeat(MAX_ENTRY / 2)));
        growing.push(user("after the long one"));
        let (body, calls) = written(&memo, &growing, MIN_BYTES);
        assert_eq!(body, serde_list(&growing));
        assert_eq!(calls, [2, 3]);
        assert_eq!(memo.size(), (0, 0));
        let (body, calls) = written(&memo, &growing, MIN_BYTES);
        assert_eq!(body, serde_list(&growing));
        assert_eq!(calls, [0, 1, 2, 3]);
        assert_eq!(memo.size(), (0, 0));

        // An entry over an eighth of the budget is not kept.
        let huge = vec![user(&"x".repeat(BUDGET_BYTES / 16 + 1))];
        written(&memo, &huge, MIN_BYTES);
        assert_eq!(memo.size(), (0, 0));
        // Many conversations: the budget holds, the least recently used go first.
        let each = vec![user(&"y".repeat(BUDGET_BYTES / 64))];
        for n in 0..100 {
            let mut chat = each.clone();
            chat.push(user(&n.to_string()));
            written(&memo, &chat, MIN_BYTES);
        }
        let (count, bytes) = memo.size();
        assert!(bytes <= BUDGET_BYTES, "{bytes}");
        assert!(count < 100 && count > 10, "{count}");
    }
}
