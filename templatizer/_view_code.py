"""The script of a view (`_views`): text a tool printed, read as rows, at replay time and, in the sandbox, when
saving, so what is verified is what replays. One reading per shape: an aligned table (its names in capitals, or
over a rule), a markdown table, embedded JSON (or a Python literal), CSV, a list of names, YAML items, records of
`Key: value` lines, a list of links with their fields, a task list, markdown sections; and an object keyed by its
entries' names, as a list of them."""

from __future__ import annotations

from typing import Final

__all__ = ["VIEW_CODE"]

VIEW_CODE: Final = r"""export default function(input) {
  if (input.shape === "keyed") return keyed(input.text);
  const raw = Array.isArray(input.text)  // one text block per item: the blocks of several lines, as one text
    ? input.text.filter((b) => b && b.type === "text" && String(b.text).includes("\n")).map((b) => b.text).join("\n\n")
    : input.text;
  const lines = String(raw === null || raw === undefined ? "" : raw).split(/\r?\n/);
  if (input.shape === "table") return whole(table(lines));
  if (input.shape === "pipes") return whole(pipes(lines));
  if (input.shape === "dashed") return whole(dashed(lines));
  if (input.shape === "ruled") return whole(ruled(lines));
  if (input.shape === "json") return embedded(lines);
  if (input.shape === "csv") return whole(csv(lines));
  if (input.shape === "names") return names(lines);
  if (input.shape === "nested") return nested(lines);
  if (input.shape === "yaml") return yaml(lines);
  if (input.shape === "records") return records(lines);
  if (input.shape === "links") return links(lines);
  if (input.shape === "checklist") return checklist(lines);
  return sections(lines, input.level);
}

function keyed(map) {  // an object keyed by each entry's name (`{"billing": {...}, "audit": {...}}`): its entries
  if (map === null || typeof map !== "object" || Array.isArray(map)) return [];
  return Object.entries(map).map(([name, value]) => Object.assign({ name: name }, value));
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

function dashed(lines) {
  // A header underlined by runs of dashes (`---------- ----------`: tsh, az, PowerShell): each run is a column,
  // from its start to the next one's, so a cell may hold spaces (`⟵ Tunnel`); the rows end at a blank line.
  const spans = [];
  const run = /-+/g;
  for (let m = run.exec(lines[1]); m !== null; m = run.exec(lines[1])) spans.push(m.index);
  const cut = (line, j) => line.slice(spans[j], j + 1 < spans.length ? spans[j + 1] : undefined).trim();
  const names = spans.map((_, j) => cut(lines[0], j));
  const out = [];
  for (const line of lines.slice(2)) {
    if (line.trim() === "") break;
    const row = {};
    names.forEach((name, j) => {
      row[name] = cut(line, j);
    });
    out.push(row);
  }
  return out;
}

function ruled(lines) {
  // Column names over one rule drawn across (`restic snapshots`: `-----...`), the rows under it up to the next rule
  // or blank line (a count follows): each column from its name's start to the next one's, so a cell may hold
  // spaces (`2026-03-01 02:00:03`).
  const body = lines.slice(Math.max(0, lines.findIndex((line) => line.trim() !== "")));
  const starts = [];
  const names = [];
  const column = /\S+(?: \S+)*/g;
  for (let m = column.exec(body[0] || ""); m !== null; m = column.exec(body[0] || "")) {
    starts.push(m.index);
    names.push(m[0]);
  }
  const out = [];
  for (const line of body.slice(2)) {
    if (line.trim() === "" || /^\s*(?:-{3,}|={3,})\s*$/.test(line)) break;
    const row = {};
    names.forEach((name, i) => {
      row[name] = line.slice(starts[i], i + 1 < starts.length ? starts[i + 1] : line.length).trim();
    });
    out.push(row);
  }
  return out;
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

function nested(lines) {
  // `name:` lines, each followed by its indented answer: a row per name, its first answer line as its value
  const out = [];
  for (const line of lines) {
    if (line.trim() === "") continue;
    if (!/^\s/.test(line) && line.trimEnd().endsWith(":")) out.push({ name: line.trimEnd().slice(0, -1), value: null });
    else if (out.length > 0 && out[out.length - 1].value === null) out[out.length - 1].value = line.trim();
  }
  return out;
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
    const after = tail(m[3].replace(field, ""));
    for (const key of Object.keys(after)) if (!(key in row)) row[key] = after[key];
    out.push(row);
  }
  return out;
}

function tail(text) {
  // The fields after a link's dash (` — id 1821, 14 min read, tags: kernel`), one per comma-separated part:
  // `Key: value`, a word then a value with a digit (`id 1821`), a number then its words (`min_read`: 14).
  const row = {};
  const rest = /^\s*[\u2014\u2013-]+\s+(.*)$/.exec(text);
  for (const part of rest === null ? [] : rest[1].split(/\s*[,;|\u00b7]\s+/)) {
    const named = /^([A-Za-z][\w .\/-]{0,40}?):\s+(.+)$/.exec(part);
    const valued = /^([a-z][\w-]*)\s+#?(\S*\d\S*)$/.exec(part);
    const counted = /^(-?\d+(?:\.\d+)?)\s+([A-Za-z][A-Za-z ]{0,30}?)\s*$/.exec(part);
    if (named !== null) row[named[1]] = named[2];
    else if (valued !== null) row[valued[1]] = /^-?\d+(\.\d+)?$/.test(valued[2]) ? Number(valued[2]) : valued[2];
    else if (counted !== null) row[counted[2].replace(/ +/g, "_")] = Number(counted[1]);
  }
  return row;
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

function pipes(drawn) {
  // (a bordered table's rules too: `+------+--------+`, above and below the header and at the end; one drawn
  // with box characters, `│ ID │` and `┼────┼`, reads as that one)
  const lines = drawn.map((line) =>
    line.replace(/[\u2502\u2503\u2551]/g, "|").replace(/[\u2500\u2501\u2550]/g, "-")
      .replace(/[\u253c\u250c\u2510\u2514\u2518\u251c\u2524\u252c\u2534\u254b\u256c\u256a\u256b]/g, "+"));
  const rule = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$|^\s*\|(\s*:?-+:?\s*\|){2,}\s*$|^\s*\+(-+\+)+\s*$/;
  const ruled = lines.findIndex((line, i) => i > 0 && rule.test(line) && lines[i - 1].includes("|"));
  // (a header with no rule under it, `ID | Hostname | Last seen`: every line has as many bars as it)
  const [head, first] = ruled >= 1 ? [ruled - 1, ruled + 1] : bare(lines) ? [0, 1] : [-1, -1];
  if (head < 0) return [];
  const cells = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
  const names = cells(lines[head]);
  const out = [];
  for (let i = first; i < lines.length && (lines[i].includes("|") || rule.test(lines[i])); i++) {
    if (rule.test(lines[i])) continue;
    const found = cells(lines[i]);
    const row = {};
    names.forEach((name, j) => {
      row[name] = j < found.length ? found[j] : "";
    });
    out.push(row);
  }
  return out;
}

function bare(lines) {
  const bars = (line) => (line.match(/\|/g) || []).length;
  const kept = lines.filter((line) => line.trim() !== "");
  return kept.length >= 2 && lines[0] === kept[0] && bars(kept[0]) >= 2 && kept.every((l) => bars(l) === bars(kept[0]));
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
