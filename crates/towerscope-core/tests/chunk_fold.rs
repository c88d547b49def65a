//! `ChunkFold` folds a stream of tool chunks exactly as `ToolResponse::append_chunk` does chunk
//! by chunk, on generated streams: same blocks, same texts and data, same ids (but for the new
//! ids both give a block they could not merge), same state and metadata.
//!
//! Each property runs 256 cases by default (`PROPTEST_CASES` overrides it).
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use towerscope_core::message::{DataBlock, MediaBlock, TextBlock, ToolResultState};
use towerscope_core::tool::{ChunkFold, ToolChunk, ToolResponse};

/// A piece: text or base64 or URL data, with one of a few ids (so pieces merge, and conflict
/// across kinds) or a fresh one.
fn piece() -> impl Strategy<Value = MediaBlock> {
    let id = prop::option::of(prop::sample::select(vec!["a", "b", "c", "d"]));
    let body = prop_oneof![
        "[xyz]{0,3}".prop_map(|t| MediaBlock::from(TextBlock::new(t))),
        prop::sample::select(vec!["YWI=", "Yw==", "Zg", "not base64!"])
            .prop_map(|d| MediaBlock::from(DataBlock::base64(d, "audio/wav"))),
        Just(MediaBlock::from(DataBlock::url("https://x/a.png", "image/png"))),
    ];
    (body, id).prop_map(|(block, id)| match (block, id) {
        (MediaBlock::Text(t), Some(id)) => t.with_id(id).into(),
        (MediaBlock::Data(d), Some(id)) => d.with_id(id).into(),
        (block, None) => block,
    })
}

fn chunk() -> impl Strategy<Value = ToolChunk> {
    let state = prop::sample::select(vec![
        ToolResultState::Running,
        ToolResultState::Success,
        ToolResultState::Denied,
        ToolResultState::Interrupted,
        ToolResultState::Error,
    ]);
    let metadata = prop::option::of((prop::sample::select(vec!["k", "mcp_progress"]), 0i64..3));
    (prop::collection::vec(piece(), 0..4), state, metadata).prop_map(|(content, state, metadata)| {
        let mut meta = Map::new();
        if let Some((key, value)) = metadata {
            meta.insert(key.to_owned(), json!(value));
        }
        ToolChunk::new(content).with_state(state).with_metadata(meta)
    })
}

/// What a block is, with an id that no input had (a block renamed because it could not merge)
/// written as `new`.
fn shape(block: &MediaBlock, known: &HashSet<String>) -> (String, Value) {
    let id = block.id().to_string();
    let id = if known.contains(&id) { id } else { "new".to_owned() };
    let mut value = serde_json::to_value(block).unwrap();
    if let Some(object) = value.as_object_mut() {
        object.remove("id");
    }
    (id, value)
}

proptest! {
    #[test]
    fn a_fold_gives_what_appending_chunk_by_chunk_gives(
        initial in prop::collection::vec(piece(), 0..4),
        chunks in prop::collection::vec(chunk(), 0..60),
    ) {
        let start = ToolResponse::new(initial.clone());
        let mut appended = start.clone();
        let mut fold = ChunkFold::new(start);
        for chunk in &chunks {
            appended.append_chunk(chunk);
            fold.push(chunk);
        }
        let folded = fold.into_response();
        let known: HashSet<String> = initial
            .iter()
            .chain(chunks.iter().flat_map(|c| c.content.iter()))
            .map(|b| b.id().to_string())
            .collect();
        let shapes = |r: &ToolResponse| r.content.iter().map(|b| shape(b, &known)).collect::<Vec<_>>();
        prop_assert_eq!(shapes(&folded), shapes(&appended));
        prop_assert_eq!(folded.state, appended.state);
        prop_assert_eq!(&folded.metadata, &appended.metadata);
    }
}

/// Many blocks that never merge (data with distinct ids, each followed by text): the fold keeps
/// every one, in order, with the text pieces merged into one block after each.
#[test]
fn a_fold_of_many_blocks_keeps_each_in_order() {
    let mut fold = ChunkFold::new(ToolResponse::new(Vec::new()));
    for i in 0..5_000 {
        let data = MediaBlock::from(DataBlock::url(format!("https://x/{i}.png"), "image/png"));
        fold.push(&ToolChunk::new(vec![data, MediaBlock::text("a")]));
        fold.push(&ToolChunk::new(vec![MediaBlock::text("b")]));
    }
    let response = fold.into_response();
    assert_eq!(response.content.len(), 10_000);
    for (i, pair) in response.content.chunks(2).enumerate() {
        let url = match &pair[0] {
            MediaBlock::Data(d) => serde_json::to_value(&d.source).unwrap(),
            other => panic!("block {} is {other:?}", 2 * i),
        };
        assert_eq!(url["url"], format!("https://x/{i}.png"));
        assert_eq!(pair[1].as_text().map(|t| t.text.as_str()), Some("ab"));
    }
}
