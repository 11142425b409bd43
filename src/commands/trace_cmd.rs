//! `hicache-sim trace gen`, `trace stats` and `trace convert`.

use std::path::Path;

use super::{
    CmdResult, CommandError, OutputFormat, TraceCommand, TraceConvertArgs, TraceGenArgs,
    TraceStatsArgs,
};
use crate::error::InputError;
use crate::workload::generate::{GeneratorConfig, generate_records};
use crate::workload::read::{RecordReader, TraceColumns, TraceFormat, TraceOptions, TraceReader};
use crate::workload::stats::stats;
use crate::workload::write::MooncakeWriter;

pub fn trace(c: TraceCommand) -> CmdResult {
    match c {
        TraceCommand::Gen(a) => gen_cmd(a),
        TraceCommand::Stats(a) => stats_cmd(a),
        TraceCommand::Convert(a) => convert_cmd(a),
    }
}

fn parse_format(file: &str, f: Option<&str>) -> Result<Option<TraceFormat>, InputError> {
    f.map(|f| {
        TraceFormat::from_id(f).ok_or_else(|| {
            InputError::new(
                file,
                format!(
                    "unknown trace format `{f}`: expected mooncake, bailian, kv-cache-tester or csv"
                ),
            )
        })
    })
    .transpose()
}

/// `trace convert IN -o OUT`: parse the whole trace (any error is refused: a binary
/// file holds only good records), then write the columns next to OUT and rename.
fn convert_cmd(a: TraceConvertArgs) -> CmdResult {
    let input = Path::new(&a.input);
    let output = Path::new(&a.output);
    crate::output::refuse_input_as_output("-o", output, &[("input trace", input)])?;
    let opts = TraceOptions {
        format: parse_format(&a.input, a.trace_format.as_deref())?,
        block_size: a.block_size,
        require_monotonic: false,
    };
    let mut cols = TraceColumns::collect(RecordReader::open(input, &opts)?);
    if let Some(e) = cols.tail_error.take() {
        return Err(e.into());
    }
    // Provenance of a file (a pipe, `<(zcat t.gz)`, was consumed by the parse: none).
    if std::fs::metadata(input).is_ok_and(|m| m.is_file()) {
        cols.source_hash = crate::fingerprint::content_hash(input)
            .map_err(|e| InputError::new(&a.input, format!("cannot read: {e}")))?;
        cols.source_len = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    }
    // Through a symlink to its target, in place on a device, atomically otherwise.
    crate::output::write_with(output, |mut w| cols.write_binary(&mut w))
        .map_err(|e| CommandError::Other(format!("{}: {e}", a.output)))?;
    eprintln!(
        "wrote {} requests, {} hash ids of {}-token blocks ({} source) to {} (binary trace v{})",
        cols.len(),
        cols.id_count(),
        cols.block_size,
        cols.format.id(),
        a.output,
        crate::workload::read::columns::BIN_VERSION
    );
    Ok(0)
}

/// The generator config: a JSON/YAML file, or the built-in example with `--requests`.
fn gen_config(a: &TraceGenArgs) -> Result<GeneratorConfig, InputError> {
    let mut cfg = match a.config.as_deref() {
        Some(path) => {
            let text = crate::input::read_to_string(
                std::path::Path::new(path),
                crate::input::DOCUMENT_CAP,
            )
            .map_err(|e| InputError::new(path, format!("cannot read: {e}")))?;
            let v = crate::scenario::load::parse_yaml_value(&text, path)?;
            let lines = crate::scenario::lines::LineIndex::build(&text);
            serde_path_to_error::deserialize::<_, GeneratorConfig>(v).map_err(|e| {
                let p = e.path().to_string();
                crate::scenario::load::field_error(path, &lines, &p, &e.into_inner().to_string())
            })?
        }
        None => GeneratorConfig::example(a.requests.unwrap_or(1000)),
    };
    if let Some(n) = a.requests {
        cfg.requests = n;
    }
    Ok(cfg)
}

fn gen_cmd(a: TraceGenArgs) -> CmdResult {
    let cfg = gen_config(&a)?;
    let records =
        generate_records(&cfg, a.seed).map_err(|e| InputError::new("trace gen", e.to_string()))?;
    if let Some(cfg_path) = a.config.as_deref() {
        crate::output::refuse_input_as_output(
            "-o",
            Path::new(&a.output),
            &[("generator config", Path::new(cfg_path))],
        )?;
    }
    let mut n = 0;
    crate::output::write_with(Path::new(&a.output), |w| {
        let mut mw = MooncakeWriter::new(w, true).with_block_size(cfg.block_size);
        for r in records {
            mw.write(&r)?;
        }
        n = mw.finish()?.1;
        Ok(())
    })
    .map_err(|e| CommandError::Other(format!("{}: {e}", a.output)))?;
    eprintln!(
        "wrote {n} requests to {} (Mooncake JSONL, hash_ids of {}-token blocks; every line says \"block_size\": {}, which the readers take)",
        a.output, cfg.block_size, cfg.block_size
    );
    Ok(0)
}

fn stats_cmd(a: TraceStatsArgs) -> CmdResult {
    let format = a
        .trace_format
        .as_deref()
        .map(|f| TraceFormat::from_id(f).ok_or_else(|| InputError::new(&a.file, format!("unknown trace format `{f}`: expected mooncake, bailian, kv-cache-tester or csv"))))
        .transpose()?;
    let opts = TraceOptions {
        format,
        block_size: a.block_size,
        require_monotonic: false,
    };
    // Pages default to the trace's own block size (the format's, the file's own
    // `block_size`, a binary trace's header, or --block-size).
    let records = RecordReader::open(Path::new(&a.file), &opts)?;
    let fmt = records.format();
    let page = a.page_size.unwrap_or(records.block_size());
    let reader = TraceReader::new(records, page)?;
    let st = stats(reader, page)?;
    match a.format {
        OutputFormat::Text => {
            println!("{} ({}, {page}-token pages)", a.file, fmt.id());
            print!("{}", st.to_text());
        }
        OutputFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&st).map_err(|e| CommandError::Other(e.to_string()))?
        ),
    }
    Ok(0)
}
