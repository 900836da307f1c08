//! `cargo run --release --example read -- FILE [FORMAT [parse|ids]]`: the reader on a file,
//! oxttl's parse alone of a slice (`parse`) or of a reader (`reader`), or the parse into ids (`ids`); time each process's CPU.
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
    let b = parse(&data, format, &mut terms, None, false).expect("parsed");
    println!(
        "into ids: {} quads, {} terms in {:.3} s",
        b.len(),
        terms.len(),
        t.elapsed().as_secs_f64()
    );
}
