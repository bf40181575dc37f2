"""Views of text outputs: a table or a markdown listing a tool printed, read as a list of rows.

Many tools answer in text: `kubectl get pods` prints an aligned table, issue trackers a markdown section
per issue (`## KEY` then `**Field**: value` lines), others a markdown table. Read as rows (`{column:
value}`), what the agent took out of them is an element of a list like any JSON output's, so refs, loops
over every row or over the rows one column selects, and joins of a column apply to it. A `code` step added
after the step that printed the text parses it at replay time; the rows the templatizer reasons on come
from the same script, run in the sandbox when saving, so what is verified is what replays. Text with no
such rows (a "No issues found." in another world) gives an empty list, not an error.
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from toolreel.core.errors import CodeError
from toolreel.core.model import JSON, StepRecord
from toolreel.core.sandbox import CodeLimits, run_code
from toolreel.templatizer._values import free_name, json_path

if TYPE_CHECKING:
    from toolreel.templatizer._runs import Run

__all__ = ["VIEW_CODE", "View", "read_view", "view_input"]

VIEW_CODE: Final = r"""export default function(input) {
  const raw = Array.isArray(input.text)  // one text block per item: the blocks of several lines, as one text
    ? input.text.filter((b) => b && b.type === "text" && String(b.text).includes("\n")).map((b) => b.text).join("\n\n")
    : input.text;
  const lines = String(raw === null || raw === undefined ? "" : raw).split(/\r?\n/);
  if (input.shape === "table") return whole(table(lines));
  if (input.shape === "pipes") return whole(pipes(lines));
  if (input.shape === "json") return embedded(lines);
  if (input.shape === "csv") return csv(lines);
  if (input.shape === "names") return names(lines);
  if (input.shape === "yaml") return yaml(lines);
  if (input.shape === "records") return records(lines);
  if (input.shape === "links") return links(lines);
  if (input.shape === "checklist") return checklist(lines);
  return sections(lines, input.level);
}

function embedded(lines) {
  // The first of (at most 5) lines opening a JSON array or object that parses whole: on that line, or up to
  // the first later line closing it at the same indentation (pretty-printed JSON). A few tries per text.
  const opens = /^(\s*)(\[\s*(\{|$)|\{\s*(["']|$))/;
  let tried = 0;
  for (let i = 0; i < lines.length && tried < 5; i++) {
    const open = opens.exec(lines[i]);
    if (open === null) continue;
    tried++;
    let j = i;
    if (!/[\]}]\s*$/.test(lines[i])) {
      j = lines.findIndex((line, k) => k > i && line.startsWith(open[1]) && /^[\]}]/.test(line.slice(open[1].length)));
      if (j < 0) continue;
    }
    const text = lines.slice(i, j + 1).join("\n");
    for (const read of [JSON.parse, (t) => JSON.parse(pythonToJson(t))]) {
      try {
        const found = read(text);
        return Array.isArray(found) ? found : [found];
      } catch (e) {
        // not JSON (nor a Python literal) after all: the next reading, or the next opening line
      }
    }
  }
  return [];
}

function pythonToJson(text) {
  // A Python literal of lists, dicts, strings, numbers, True/False/None (a `str(rows)` answer) as JSON.
  let out = "";
  for (let i = 0; i < text.length; ) {
    const c = text[i];
    if (c === "'" || c === '"') {
      let value = "";
      let k = i + 1;
      for (; k < text.length && text[k] !== c; k++) {
        if (text[k] === "\\" && k + 1 < text.length) {
          k++;
          const e = text[k];
          const simple = { n: "\n", t: "\t", r: "\r", "0": "\0" };
          if (e === "x" || e === "u") {
            const width = e === "x" ? 2 : 4;
            value += String.fromCharCode(parseInt(text.slice(k + 1, k + 1 + width), 16));
            k += width;
          } else value += e in simple ? simple[e] : e;
        } else value += text[k];
      }
      if (k >= text.length) throw new Error("unterminated string");
      out += JSON.stringify(value);
      i = k + 1;
      continue;
    }
    const word = /^(True|False|None)\b/.exec(text.slice(i, i + 5));
    if (word !== null) {
      out += { True: "true", False: "false", None: "null" }[word[1]];
      i += word[1].length;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

function table(lines) {
  const rows = lines.filter((line) => line.trim() !== "");
  if (rows.length === 0) return [];
  const starts = [];
  const names = [];
  const column = /\S+(?: \S+)*/g;
  let m;
  while ((m = column.exec(rows[0])) !== null) {
    starts.push(m.index);
    names.push(m[0]);
  }
  if (names.length < 2 || !names.every((name) => /^[A-Z][A-Z0-9 _%\/().#-]*$/.test(name))) return [];
  return rows.slice(1).map((line) => {
    const row = {};
    names.forEach((name, i) => {
      row[name] = line.slice(starts[i], i + 1 < starts.length ? starts[i + 1] : line.length).trim();
    });
    return row;
  });
}

function whole(rows) {
  // A column whose every cell is a whole number (an issue's id, a torrent's) holds numbers: a call sends them as
  // numbers, and as text where it writes them (`{{@item.ID}}`). Leading zeros keep a cell text (`02139`).
  for (const name of Object.keys(rows[0] || {})) {
    if (rows.every((row) => /^(0|-?[1-9][0-9]{0,14})$/.test(row[name]))) {
      rows.forEach((row) => { row[name] = Number(row[name]); });
    }
  }
  return rows;
}

function csv(lines) {
  // A header of column names, then rows of as many comma-separated fields ("quoted, with commas" kept whole).
  const fields = (line) => {
    const out = [];
    const field = /\s*(?:"((?:[^"]|"")*)"|([^,]*))\s*(,|$)/y;
    field.lastIndex = 0;
    let m;
    while (field.lastIndex <= line.length && (m = field.exec(line)) !== null) {
      out.push(m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2].trim());
      if (m[3] === "") break;
    }
    return out;
  };
  const rows = lines.filter((line) => line.trim() !== "");
  if (rows.length === 0) return [];
  const names = fields(rows[0]);
  return rows.slice(1).filter((line) => fields(line).length === names.length).map((line) => {
    const found = fields(line);
    const row = {};
    names.forEach((name, i) => {
      row[name] = found[i];
    });
    return row;
  });
}

function yaml(lines) {
  // The first YAML sequence of mappings (`- id: '12:401'` then `  name: cart-drawer`): one row per item, its
  // scalar fields (nested blocks are skipped); the sequence ends at the first line back at a lower indentation.
  const item = /^(\s*)- ([A-Za-z_][\w-]*):(?: (.*))?$/;
  const field = /^(\s*)([A-Za-z_][\w-]*):(?: (.*))?$/;
  const scalar = (text) => {
    const v = text.trim();
    if (/^'.*'$/.test(v)) return v.slice(1, -1).replace(/''/g, "'");
    if (/^".*"$/.test(v)) {
      try {
        return JSON.parse(v);
      } catch (e) {
        return v.slice(1, -1);
      }
    }
    if (/^-?\d+(\.\d+)?$/.test(v)) return Number(v);
    if (v === "true" || v === "false") return v === "true";
    return v === "null" || v === "~" ? null : v;
  };
  const out = [];
  let indent = null;
  let row = null;
  for (const line of lines) {
    const m = item.exec(line);
    if (m !== null && (indent === null || m[1].length === indent)) {
      indent = m[1].length;
      row = {};
      out.push(row);
      if (m[3] !== undefined && m[3].trim() !== "") row[m[2]] = scalar(m[3]);
      continue;
    }
    if (indent === null) continue;
    const f = field.exec(line);
    if (f !== null && f[1].length === indent + 2) {
      if (f[3] !== undefined && f[3].trim() !== "") row[f[2]] = scalar(f[3]);
      continue;
    }
    if (line.trim() === "" || line.search(/\S/) > indent + 2) continue;
    break;
  }
  return out.filter((r) => Object.keys(r).length >= 2);
}

function records(lines) {
  // Records of `Key: value` lines, one record per block: blocks end at a blank line or a `---` rule. A bullet
  // before a field is dropped (`• Status: RUNNING`). A block's first line that is not a field is its title
  // (`🗃️ web-01 (ID: 101)`: `title` web-01, and `ID` 101 from the closing parenthesis); other lines inside a
  // block (a description's text) are skipped. A bulleted line that is no field opens a record too (`• name`, its
  // fields indented below), and a line may hold several fields (`state: stalledDL | progress: 12.0%`).
  const field = /^(?:[-*\u2022\u00b7\u25aa\u25e6\u2023]\s+)?([A-Za-z][\w .\/-]{0,40}?):\s+(.*)$/;
  const bullet = /^[-*\u2022\u00b7\u25aa\u25e6\u2023]\s+\S/;
  const more = /\s+\|\s+(?=[A-Za-z][\w .\/-]{0,40}?:\s)/;
  const titled = /^(.*?)\s*\(([A-Za-z][\w .\/-]{0,40}?):\s*([^()]*?)\)$/;
  const out = [];
  let row = null;
  let opening = true;
  for (const line of lines) {
    const text = line.trim();
    if (text === "" || /^(-{3,}|={3,}|\*{3,})$/.test(text)) {
      row = null;
      opening = true;
      continue;
    }
    const m = field.exec(text);
    if (m === null) {
      if (opening || bullet.test(text)) {
        const title = text.replace(/^[^\p{L}\p{N}]+/u, "").replace(/[*_`]+$/, "");  // (`**new-checkout**`)
        const parts = titled.exec(title);
        row = parts === null ? { title: title } : { title: parts[1], [parts[2]]: parts[3] };
        out.push(row);
      }
      opening = false;
      continue;
    }
    opening = false;
    if (row === null) {
      row = {};
      out.push(row);
    }
    const [value, ...others] = m[2].split(more);
    row[m[1]] = value;
    others.map((other) => field.exec(other)).forEach((o) => o !== null && (row[o[1]] = o[2]));
  }
  return out.filter((r) => Object.keys(r).length >= 2);
}

function links(lines) {
  // A markdown list of links, one item per line (`- [Retro 2026-11-20](https://wiki/doc/...) (id: Xy8v) — …`): the
  // link's text as `title`, its target as `url` (a URL may hold parentheses: it ends at a `)` before a space), and
  // every `(Key: value)` after it as a field.
  const item = /^\s*(?:[-*\u2022]|\d+\.)\s+\[([^\]]+)\]\((\S+?)\)(?=\s|$)(.*)$/;
  const field = /\(([A-Za-z][\w .\/-]{0,40}?):\s*([^()]*?)\)/g;
  const out = [];
  for (const line of lines) {
    const m = item.exec(line);
    if (m === null) continue;
    const row = { title: m[1], url: m[2] };
    for (const f of m[3].matchAll(field)) row[f[1]] = f[2];
    out.push(row);
  }
  return out;
}

function checklist(lines) {
  // A markdown task list (`- [ ] Rotate the staging certs`, `- [x] Write the timeline`): one row per item, its
  // text as `title`, `done` whether it is ticked, and `section` the heading it sits under.
  const item = /^\s*[-*+]\s+\[([ xX])\]\s+(.*?)\s*$/;
  const heading = /^\s*#{1,6}\s+(.*?)\s*#*\s*$/;
  const out = [];
  let section = "";
  for (const line of lines) {
    const h = heading.exec(line);
    if (h !== null) {
      section = h[1];
      continue;
    }
    const m = item.exec(line);
    if (m !== null) out.push({ title: m[2], done: m[1] !== " ", section: section });
  }
  return out;
}

function names(lines) {
  // One name per line (`#` comment lines aside), or names separated by commas on one line after a label
  // (`Kafka topics: orders,dlq.orders`).
  const token = /^[\w.\-\/:@]+$/;
  const kept = lines.map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"));
  if (kept.length === 1) {
    const parts = kept[0].replace(/^[A-Za-z][\w ]*:\s+/, "").split(",").map((part) => part.trim());
    return parts.every((part) => token.test(part)) ? parts : [];
  }
  // (three names at least make a text a list when saving; a replay reads however many there are)
  return kept.every((line) => token.test(line)) ? kept : [];
}

function pipes(lines) {
  const rule = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$|^\s*\|(\s*:?-+:?\s*\|){2,}\s*$/;
  const at = lines.findIndex((line, i) => i > 0 && rule.test(line) && lines[i - 1].includes("|"));
  if (at < 1) return [];
  const cells = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
  const names = cells(lines[at - 1]);
  const out = [];
  for (let i = at + 1; i < lines.length && lines[i].includes("|"); i++) {
    const found = cells(lines[i]);
    const row = {};
    names.forEach((name, j) => {
      row[name] = j < found.length ? found[j] : "";
    });
    out.push(row);
  }
  return out;
}

function sections(lines, level) {
  const out = [];
  let row = null;
  for (const line of lines) {
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading !== null) {
      if (heading[1].length <= level) row = null;
      if (heading[1].length === level) {
        row = { heading: heading[2] };
        out.push(row);
      }
      continue;
    }
    const field = /^\s*(?:[-*]\s+)?\*\*([^*]+?):?\*\*:?\s*(.*?)\s*$/.exec(line);
    if (row !== null && field !== null) row[field[1]] = field[2];
  }
  return out.filter((r) => Object.keys(r).length > 1);
}
"""
_LIMITS: Final = CodeLimits(timeout=1.0, memory_mb=32)
_HEADER_RE: Final = re.compile(r"^[A-Z][A-Z0-9 _%/().#-]*$")
# `| --- | --- |`, `---|---`; between pipes on both sides a cell may be shorter (`| -- | ---- |`, as GFM allows)
_RULE_RE: Final = re.compile(
    r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$|^\s*\|(\s*:?-+:?\s*\|){2,}\s*$", re.MULTILINE
)
_HEADING_RE: Final = re.compile(r"^(#{1,6})\s+\S")
_FIELD_RE: Final = re.compile(r"^\s*(?:[-*]\s+)?\*\*[^*]+?\*\*")
# A line that opens JSON records inside prose (a database tool's rows between untrusted-data tags).
_JSON_LINE_RE: Final = re.compile(r"^(\s*)(?:\[\s*(?:\{|$)|\{\s*(?:[\"']|$))", re.MULTILINE)
_CSV_NAME_RE: Final = re.compile(r"^[A-Za-z_][\w.]*$")  # a column name: one word, no spaces (not a sentence)
_CSV_MIN_COLUMNS: Final = 2
_JSON_TRIES: Final = 5  # opening lines tried per text: a few parses, however long the text


@dataclass(frozen=True, slots=True)
class View:
    """The rows of a step's text output: the code step `name` computes them from `@source`."""

    name: str
    source: str
    shape: str  # table | pipes | csv | sections | json | names | yaml | records | links | checklist
    level: int  # the heading level of a section per row (sections only)
    rows: tuple[JSON, ...]  # per recording (None where the step is absent)

    @property
    def input(self) -> JSON:
        return view_input(self.source, self.shape, self.level)

    @property
    def step(self) -> str:
        """The step whose output holds the text (`source` may read one block of it: `find_1[1].text`)."""
        return re.split(r"[.\[]", self.source, maxsplit=1)[0]


def view_input(source: str, shape: str, level: int) -> JSON:
    return {"text": f"@{source}", "shape": shape, "level": level}


def read_view(record: StepRecord, runs: Sequence[Run], taken: set[str]) -> View | None:
    """The view of `record`'s text output when it reads as two or more fields per row, with one row at least.
    An output of several text blocks (`[{type: text, text}, ...]`) is read block by block: the first that
    reads as rows is the view's text (`@step[1].text`)."""
    output = runs[0].outputs.get(record.name)
    blocks = _blocks(output)
    if blocks.count("\n\n") and _shape(blocks) == ("records", 0):  # one block per item (`Agent ID: 003` ...)
        rows = _rows(blocks, "records", 0)
        if isinstance(rows, list) and len(rows) >= _BLOCK_ROWS:
            others = [_rows(_blocks(run.outputs.get(record.name)), "records", 0) for run in runs[1:]]
            return View(free_name(f"{record.name}_rows", taken), record.name, "records", 0, (rows, *others))
    for at, text in _texts(output):
        shape = _shape(text)
        if shape is None:
            continue
        rows = _rows(text, *shape)
        if not isinstance(rows, list) or not rows:
            continue
        name = free_name(f"{record.name}_rows", taken)
        source = record.name if at is None else f"{record.name}[{at}].text" if isinstance(at, int) else ""
        if isinstance(at, str):
            source = f"{record.name}{json_path((at,))[1:]}"
        others = [_rows(_text_at(run.outputs.get(record.name), at), *shape) for run in runs[1:]]
        return View(name, source, shape[0], shape[1], (rows, *others))
    return None


def _texts(output: JSON) -> list[tuple[int | str | None, str]]:
    if isinstance(output, str):
        return [(None, output)]
    if isinstance(output, dict):  # a file's `content`, a command's `stdout`: a text field of several lines
        return [(key, text) for key, text in output.items() if isinstance(text, str) and "\n" in text.strip()]
    if not isinstance(output, list):
        return []
    return [
        (i, block["text"])
        for i, block in enumerate(output)
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]


def _blocks(output: JSON) -> str:
    """The text blocks of several lines of an output, one after another (as the view's script joins them)."""
    return "\n\n".join(text for at, text in _texts(output) if isinstance(at, int) and "\n" in text)


_BLOCK_ROWS: Final = 2


def _text_at(output: JSON, at: int | str | None) -> JSON:
    if at is None:
        return output
    if isinstance(at, str):
        return output.get(at) if isinstance(output, dict) else None
    if isinstance(output, list) and at < len(output) and isinstance(output[at], dict):
        return output[at].get("text")
    return None


def _shape(text: str) -> tuple[str, int] | None:
    """Which parser the text calls for (cheap tests first: most outputs are not tables)."""
    body = text.strip()
    if "\n" not in body:
        # one line: records printed whole (`str(rows)` of a SQL tool; JSON text was parsed already), or names
        if _JSON_LINE_RE.match(body) and _embedded(body):
            return "json", 0
        return ("names", 0) if _names(body) else None
    names = re.findall(r"\S+(?: \S+)*", body.split("\n", 1)[0])
    if len(names) >= 2 and all(_HEADER_RE.match(name) for name in names):
        return "table", 0
    if "|" in body and _RULE_RE.search(body):
        return "pipes", 0
    if _csv(body):
        return "csv", 0
    if _JSON_LINE_RE.search(body) and _embedded(body):
        return "json", 0
    level = _section_level([line for line in body.splitlines() if line.strip()]) if "**" in body else 0
    if level and "#" in body:
        return "sections", level
    if _YAML_ITEM_RE.search(body):
        return "yaml", 0
    if _records(body):
        return "records", 0
    if _links(body):
        return "links", 0
    if len(_CHECK_ITEM_RE.findall(body)) >= _LINKS_MIN:
        return "checklist", 0
    return ("names", 0) if _names(body) else None


_BULLET: Final = r"[-*\u2022\u00b7\u25aa\u25e6\u2023]"  # the list markers of a text listing (`VIEW_CODE`'s too)
_KEY: Final = r"[A-Za-z][\w .\/-]{0,40}?"  # a field's name before its `: `
_RECORD_FIELD_RE: Final = re.compile(rf"^(?:{_BULLET}\s+)?({_KEY}):\s+(.*)$")
_BLOCK_SPLIT_RE: Final = re.compile(r"\n\s*(?:(?:-{3,}|={3,}|\*{3,})\s*)?\n")


# A bulleted line that is no `Key: value` field: it opens a record (`• debian.iso`, its fields indented below).
_BULLET_TITLE_RE: Final = re.compile(rf"(?m)^(?=[ \t]*{_BULLET}[ \t]+(?!{_KEY}:\s)\S)")


def _records(body: str) -> bool:
    """Two blocks or more of `Key: value` lines (two fields at least each) that open with the same key: records
    printed one per block (`Title: …` / `UUID: …`, then `---`, or under a bulleted title), not prose with a colon."""
    firsts: list[str] = []
    for block in (part for chunk in _BLOCK_SPLIT_RE.split(body) for part in _BULLET_TITLE_RE.split(chunk)):
        fields = [m.group(1) for line in block.splitlines() if (m := _RECORD_FIELD_RE.match(line.strip()))]
        if len(fields) >= 2:
            firsts.append(fields[0])
    return len(firsts) >= 2 and len(set(firsts)) == 1


_LINK_ITEM_RE: Final = re.compile(r"^\s*(?:[-*\u2022]|\d+\.)\s+\[[^\]]+\]\(\S+?\)(?=\s|$)")
_LINKS_MIN: Final = 2
_CHECK_ITEM_RE: Final = re.compile(r"(?m)^\s*[-*+]\s+\[[ xX]\]\s+\S")


def _links(body: str) -> bool:
    """A markdown list of links, two items at least, every item a link (a search's hits, a page's children)."""
    items = [line for line in body.splitlines() if re.match(r"^\s*(?:[-*\u2022]|\d+\.)\s", line)]
    return len(items) >= _LINKS_MIN and all(_LINK_ITEM_RE.match(line) for line in items)


# A YAML sequence item that is a mapping of two fields at least (`- id: '12:401'` then `  name: cart-drawer`).
_YAML_ITEM_RE: Final = re.compile(r"^( *)- [A-Za-z_][\w-]*:(?: .*)?\n\1  [A-Za-z_][\w-]*:", re.MULTILINE)


_NAME_TOKEN_RE: Final = re.compile(r"^[\w.\-/:@]+$")
_LABEL_RE: Final = re.compile(r"^[A-Za-z][\w ]*:\s+")
_NAMES_MIN: Final = 3


def _names(body: str) -> bool:
    """A list of names: one per line (comment lines aside), or separated by commas after a label."""
    kept = [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]
    if len(kept) == 1:
        parts = [part.strip() for part in _LABEL_RE.sub("", kept[0], count=1).split(",")]
        return len(parts) >= _NAMES_MIN and all(_NAME_TOKEN_RE.match(part) for part in parts)
    return len(kept) >= _NAMES_MIN and all(_NAME_TOKEN_RE.match(line) for line in kept)


def _csv(body: str) -> bool:
    """Comma-separated rows under a header of two or more distinct column names (`sku,name,qty`), every row with
    as many fields (read as CSV), a row at least. A sentence with commas has no such header."""
    lines = [line for line in body.splitlines() if line.strip()]
    names = lines[0].split(",")
    if len(names) < _CSV_MIN_COLUMNS or len(set(names)) != len(names) or len(lines) < _CSV_MIN_COLUMNS:
        return False
    if not all(_CSV_NAME_RE.match(name) for name in names):
        return False
    return all(len(row) == len(names) for row in csv.reader(lines[1:], skipinitialspace=True))


def _embedded(body: str) -> bool:
    """Whether the view's script finds JSON records in `body`: the first of (at most 5) lines opening a JSON
    array or object that parses whole, on that line or up to the first later line closing it at the same
    indentation."""
    lines = body.splitlines()
    tried = 0
    for i, line in enumerate(lines):
        opened = _JSON_LINE_RE.match(line)
        if opened is None:
            continue
        if tried == _JSON_TRIES:
            return False
        tried += 1
        indent, j = opened.group(1), i
        if not line.rstrip().endswith(("]", "}")):
            j = next(
                (
                    k
                    for k in range(i + 1, len(lines))
                    if lines[k].startswith(indent) and lines[k][len(indent) :][:1] in ("]", "}")
                ),
                -1,
            )
            if j < 0:
                continue
        if _parses("\n".join(lines[i : j + 1])):
            return True
    return False


def _parses(text: str) -> bool:
    """JSON, or the Python literal a `str(rows)` answer prints (the script reads both)."""
    try:
        json.loads(text)
    except ValueError:
        pass
    else:
        return True
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _section_level(lines: Sequence[str]) -> int:
    """The heading level whose sections hold `**Field**: value` lines (0: none)."""
    levels: list[int] = []
    current = 0
    for line in lines:
        heading = _HEADING_RE.match(line)
        if heading is not None:
            current = len(heading.group(1))
        elif current and _FIELD_RE.match(line):
            levels.append(current)
            current = 0
    return max(set(levels), key=levels.count) if levels else 0


def _rows(text: JSON, shape: str, level: int) -> JSON:
    if not isinstance(text, str):
        return None
    try:
        return run_code(VIEW_CODE, {"text": text, "shape": shape, "level": level}, _LIMITS)
    except CodeError:
        return None
