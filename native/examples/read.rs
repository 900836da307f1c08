//! `cargo run --release --example read -- FILE [FORMAT [parse|ids|events]]`: the reader on a
//! file, oxttl's parse alone of a slice (`parse`), the parse into ids (`ids`), or a stream
//! file into events of ids as the native path reads it (`events`, `rsep._core.read_stream`:
//! the default point-time predicates; `events-oxttl`: with oxttl only); time each process's CPU.
use _core::stream::read_events_with;
use _core::{parse, Format, Terms};
use oxttl::TriGParser;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("FILE");
    let format = Format::from_name(&args.next().unwrap_or_else(|| "trig".into())).expect("format");
    let only = args.next().unwrap_or_else(|| "ids".into());
    let data = std::fs::read(&path).expect("readable file");
    let t = Instant::now();
    if only == "lenient" {
        let n = TriGParser::new()
            .lenient()
            .for_slice(&data)
            .filter(Result::is_ok)
            .count();
        println!(
            "oxttl alone, lenient: {n} quads in {:.3} s",
            t.elapsed().as_secs_f64()
        );
        return;
    }
    if only == "parse" {
        let n = TriGParser::new()
            .for_slice(&data)
            .filter(Result::is_ok)
            .count();
        println!(
            "oxttl alone: {n} quads in {:.3} s",
            t.elapsed().as_secs_f64()
        );
        return;
    }
    let mut terms = Terms::new();
    if only == "events" || only == "events-oxttl" {
        let points = [
            "http://www.w3.org/ns/prov#generatedAtTime".to_owned(),
            "http://streamreasoning.org/timeVocab#startsAtTime".to_owned(),
        ];
        let ev = read_events_with(&data, &mut terms, &points, 64 << 20, only == "events")
            .expect("a stream file");
        println!(
            "into events: {} events, {} triples, {} terms in {:.3} s",
            ev.len(),
            ev.triples.len(),
            terms.len(),
            t.elapsed().as_secs_f64()
        );
        return;
    }
    let b = parse(&data, format, &mut terms, None, false).expect("parsed");
    println!(
        "into ids: {} quads, {} terms in {:.3} s",
        b.len(),
        terms.len(),
        t.elapsed().as_secs_f64()
    );
}
