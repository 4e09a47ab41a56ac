"use strict";
// The review page: one item at a time, keyboard first. Every answer is stored by the server the
// moment a task is complete; statement marks of an unfinished task live only in this tab.

const TAB_KEY = "ragwatch-review-tab";
const tab = sessionStorage.getItem(TAB_KEY) || (() => {
  const id = "tab-" + Math.random().toString(36).slice(2, 10);
  sessionStorage.setItem(TAB_KEY, id);  // survives a reload of this tab, so undo still finds its labels
  return id;
})();

let state = null;    // /api/state
let view = null;     // the item shown (/api/item/N)
let cur = null;      // its index
let taskIdx = 0;     // the task being answered; tasks.length when the item is labelled
let marks = [];      // statement marks of the current task, not yet stored
let relabel = false; // answering again an item that was labelled
let focus = null;    // the statement whose evidence is outlined
let chain = Promise.resolve();  // keys and polls run one after another: no double label

const $ = id => document.getElementById(id);

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

const fmt = x => (x === null || x === undefined) ? "–" : Number(x).toFixed(2);
const ci = pair => pair && pair[0] !== null && pair[0] !== undefined ? `[${fmt(pair[0])}, ${fmt(pair[1])}]` : "";

async function api(path, body) {
  const opts = body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({tab, ...body}),
  };
  const res = await fetch(path, opts);
  const data = await res.json().catch(() => ({error: res.statusText}));
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

function notice(text, error) {
  const box = $("notice");
  box.textContent = text;
  box.className = "notice" + (error ? " error" : "");
  box.hidden = !text;
}

// --- navigation -------------------------------------------------------------------------------

function firstOpenTask() {
  const i = view.tasks.findIndex(t => !(t.metric in view.labels));
  return i < 0 ? view.tasks.length : i;
}

const answering = () => view && taskIdx < view.tasks.length;

let knownSeq = 0;  // the newest log line this tab wrote or saw: an older state is a stale answer

async function refreshState() {
  const fresh = await api("/api/state?tab=" + encodeURIComponent(tab));
  if (fresh.seq < knownSeq) return false;  // answered before our last label was stored
  state = fresh; knownSeq = fresh.seq;
  renderState();
  return true;
}

function wrote(res) { knownSeq = Math.max(knownSeq, res.event.seq); return res; }

async function show(index) {
  if (!state || !state.items.length) return;
  index = Math.max(0, Math.min(state.items.length - 1, index));
  view = await api("/api/item/" + index);
  const changed = cur !== index;
  cur = index; marks = []; relabel = false; focus = null;
  taskIdx = firstOpenTask();
  history.replaceState(null, "", "#item=" + (index + 1));
  if (changed) { $("contexts-col").scrollTop = 0; $("main").scrollTop = 0; }
  render();
}

function nextToLabel() {
  const n = state.items.length;
  for (let k = 1; k <= n; k++) {
    const it = state.items[(cur + k) % n];
    if (!it.done && !it.skipped) return it.index;
  }
  const open = state.items.find(it => !it.done);
  return open ? open.index : null;
}

async function goNext() {
  const next = nextToLabel();
  if (next === null) { notice(`All ${state.target} items are labelled. Thank you! Run python run.py evaluate for the estimate.`); return; }
  await show(next);
}

async function submit(task, payload) {
  const seen = view.labels[task.metric] ? view.labels[task.metric].seq : 0;
  const res = wrote(await api("/api/label", {item_id: view.item_id, metric: task.metric, seen, ...payload}));
  notice(res.notice || "");
  view = res.item; marks = [];
  if (relabel) {
    taskIdx += 1;
    if (taskIdx >= view.tasks.length) relabel = false;
  } else {
    taskIdx = firstOpenTask();
  }
  if (firstOpenTask() >= view.tasks.length && !state.items[cur].done) {
    state.items[cur].done = true;  // at once, for Enter and the bar; the refresh below brings the figures
    state.items[cur].skipped = false;
    state.labelled += 1;
    renderProgress();
  }
  render();
  refreshSoon();
}

let refreshing = false, again = false;
function refreshSoon() {
  // the figures (agreement bootstrap, PPI) take a moment: the next key does not wait for them
  if (refreshing) { again = true; return; }
  refreshing = true;
  refreshState().then(current => { if (!current) again = true; })
    .catch(err => notice(String(err.message || err), true)).finally(() => {
      refreshing = false;
      if (again) { again = false; refreshSoon(); }
    });
}

async function onKey(key) {
  if (!view) return;
  const task = answering() ? view.tasks[taskIdx] : null;
  if (key === "ArrowRight") return show(cur + 1);
  if (key === "ArrowLeft") return show(cur - 1);
  if (key === "Enter" || key === " ") return answering() ? undefined : goNext();
  if (key === "?") { $("keys").scrollIntoView(); return; }
  if (key === "s") {
    wrote(await api("/api/skip", {item_id: view.item_id}));
    await refreshState();
    return goNext();
  }
  if (key === "u") {
    if (marks.length) { marks.pop(); return render(); }
    const res = wrote(await api("/api/undo", {}));
    await refreshState();
    await show(res.index);
    notice("Undone: answer the item again.");
    return;
  }
  if (key === "r" && !answering()) { relabel = true; taskIdx = 0; marks = []; return render(); }
  if (!task) {
    if ("yn12345678901".includes(key)) notice("This item is labelled: Enter for the next one, r to label it again.");
    return;
  }
  if (key === "y" || key === "n") {
    const v = key === "y" ? 1 : 0;
    if (task.kind === "statements") {
      marks.push(v);
      if (marks.length < task.statements.length) return render();
      return submit(task, {statements: marks});
    }
    if (task.kind === "binary") return submit(task, {value: v});
    notice(`${task.metric} is a ${task.scale[0]}-${task.scale[1]} score: press a number key.`);
    return;
  }
  if (/^[0-9]$/.test(key) && task.kind === "scale") {
    const v = Number(key);
    if (v < task.scale[0] || v > task.scale[1]) { notice(`${task.metric} runs from ${task.scale[0]} to ${task.scale[1]}.`); return; }
    return submit(task, {value: v});
  }
}

function run(fn) {
  chain = chain.then(fn).catch(err => notice(String(err.message || err), true));
  return chain;
}

document.addEventListener("keydown", e => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const keys = ["y", "n", "s", "u", "r", "?", "Enter", " ", "ArrowLeft", "ArrowRight"];
  if (!keys.includes(e.key) && !/^[0-9]$/.test(e.key)) return;
  e.preventDefault();
  run(() => onKey(e.key));
});

// --- rendering --------------------------------------------------------------------------------

function statementsTask() { return view.tasks.find(t => t.kind === "statements"); }

function shownMarks(task, k) {
  const i = view.tasks.indexOf(task);
  if (i === taskIdx && answering()) return marks;
  if (relabel && i > taskIdx) return [];
  const label = view.labels[task.metric];
  return label && label.statements ? label.statements : [];
}

function renderAnswer() {
  const box = $("answer");
  box.replaceChildren();
  const task = statementsTask();
  const text = view.answer || "(empty answer)";
  if (!task) { box.textContent = text; return; }
  const own = shownMarks(task);
  const current = view.tasks.indexOf(task) === taskIdx && answering() ? marks.length : -1;
  const spans = task.statement_spans.map((s, k) => s && {start: s[0], end: s[1], k}).filter(Boolean)
    .sort((a, b) => a.start - b.start);
  let pos = 0;
  for (const s of spans) {
    if (s.start < pos) continue;
    box.append(text.slice(pos, s.start));
    const cls = ["st", s.k === current ? "current" : "", own[s.k] === 1 ? "yes" : own[s.k] === 0 ? "no" : ""];
    box.append(h("span", {class: cls.join(" ").trim()}, text.slice(s.start, s.end)));
    pos = s.end;
  }
  box.append(text.slice(pos));
}

function markChip(v) {
  if (v === 1) return h("span", {class: "mark yes"}, "yes");
  if (v === 0) return h("span", {class: "mark no"}, "no");
  return h("span", {class: "mark pending"}, "?");
}

function judgeStatement(task, k, own) {
  const judge = view.judge && view.judge[task.metric];
  if (!judge) return null;
  const st = judge.statements[k];
  if (!st) return null;
  const word = st.supported === null ? "undecided" : st.supported ? "supported" : "not supported";
  const cls = "verdict " + (st.supported ? "yes" : "no") + (own !== undefined && st.supported !== null && Number(st.supported) !== own ? " diff" : "");
  const cut = judge.support_threshold;
  const p = st.p_supported === null || st.p_supported === undefined ? "" :
    ` (P(supported) ${fmt(st.p_supported)}` + (cut !== null && cut !== undefined ? ` ${st.p_supported >= cut ? "≥" : "<"} cut-off ${fmt(cut)})` : ")");
  const where = st.pointer ? h("a", {class: "where", onclick: () => { focus = k; renderContexts(); focusMark(); }},
    `looked at #${st.pointer.passage + 1}` + (st.pointer.window ? `, window ${st.pointer.window}` : "")) : null;
  return h("div", {class: "judge"}, "judge: ", h("span", {class: cls}, word + p),
    st.reason ? ` — ${st.reason} ` : " ", where);
}

function renderTasks() {
  const box = $("tasks");
  box.replaceChildren();
  view.tasks.forEach((task, i) => {
    const active = answering() && i === taskIdx;
    const label = view.labels[task.metric];
    const head = h("h3", {}, h("span", {class: "metric"}, task.metric), task.question);
    const section = h("div", {class: "task" + (answering() && i > taskIdx ? " waiting" : "")}, head);
    if (task.kind === "statements") {
      const own = shownMarks(task);
      const list = h("ol", {class: "statements"});
      task.statements.forEach((text, k) => {
        const current = active && k === marks.length;
        list.append(h("li", {class: current ? "current" : ""}, h("span", {}, text), markChip(own[k]),
          judgeStatement(task, k, own[k])));
      });
      section.append(list);
      if (active) {
        section.append(h("div", {class: "ask"}, h("span", {class: "prompt"}, `Statement ${marks.length + 1} of ${task.statements.length}: supported by the contexts?`),
          h("button", {class: "key", onclick: () => run(() => onKey("y"))}, h("kbd", {}, "y"), "yes"),
          h("button", {class: "key", onclick: () => run(() => onKey("n"))}, h("kbd", {}, "n"), "no")));
      }
    } else {
      const ask = h("div", {class: "ask"});
      const values = task.kind === "binary" ? [[1, "y", "yes"], [0, "n", "no"]] :
        Array.from({length: task.scale[1] - task.scale[0] + 1}, (_, j) => [task.scale[0] + j, String(task.scale[0] + j), ""]);
      const chosen = active ? null : (label && !(relabel && i >= taskIdx) ? label.value : null);
      for (const [value, key, word] of values) {
        ask.append(h("button", {class: "key" + (chosen === value ? " chosen" : ""), onclick: () => run(() => onKey(key))},
          h("kbd", {}, key), word));
      }
      section.append(ask);
    }
    const judge = view.judge && view.judge[task.metric];
    if (judge) {
      const mine = label ? (task.kind === "statements" ? `you: ${fmt(label.value)}` : `you: ${label.value}`) : "";
      section.append(h("div", {class: "judge-line"}, h("b", {}, "Judge: "), judge.verdict,
        mine ? h("span", {class: "muted"}, ` · ${mine}`) : null,
        task.kind !== "statements" && judge.reason ? h("span", {class: "reason"}, judge.reason) : null));
    }
    box.append(section);
  });
  const hint = $("next-hint");
  hint.hidden = answering();
  hint.replaceChildren("Labelled. ", h("kbd", {}, "Enter"), " next item to label · ", h("kbd", {}, "→"),
    " next · ", h("kbd", {}, "r"), " label again · ", h("kbd", {}, "u"), " undo");
}

function highlights() {
  // per passage: [{start, end, ks, cls}]: after the reveal where the judge looked, before it the
  // reading aid for the statement being answered (from the statement's words only)
  const out = {};
  const add = (ptr, k, cls) => {
    const list = out[ptr.passage] = out[ptr.passage] || [];
    const same = list.find(p => p.start === ptr.start && p.end === ptr.end);
    if (same) same.ks.push(k); else list.push({start: ptr.start, end: ptr.end, ks: [k], cls});
  };
  if (view.judge) {
    for (const task of view.tasks) {
      const judge = view.judge[task.metric];
      if (judge) judge.statements.forEach((st, k) => { if (st.pointer) add(st.pointer, k, "judge"); });
    }
    return out;
  }
  const task = answering() ? view.tasks[taskIdx] : null;
  if (task && task.kind === "statements" && task.hints[marks.length]) {
    for (const ptr of task.hints[marks.length]) add(ptr, marks.length, "hint");
  }
  return out;
}

function renderContexts() {
  const box = $("contexts");
  box.replaceChildren();
  if (!view.passages.length) { box.append(h("p", {class: "muted"}, "The system used no context for this answer.")); return; }
  const marked = highlights();
  const hinting = Object.values(marked).some(list => list.some(m => m.cls === "hint"));
  $("legend").textContent = view.judge ? "highlighted: where the judge looked, per statement" :
    hinting ? `underlined: sentences sharing most words with statement ${marks.length + 1} (a reading aid, not the judge's)` : "";
  view.passages.forEach((p, i) => {
    const text = h("div", {class: "text"});
    let pos = 0;
    for (const m of (marked[i] || []).sort((a, b) => a.start - b.start)) {
      if (m.start < pos) continue;
      text.append(p.text.slice(pos, m.start));
      const cls = m.cls + (focus !== null && m.ks.includes(focus) ? " focus" : "");
      text.append(h("mark", {class: cls}, p.text.slice(m.start, m.end),
        m.cls === "judge" ? h("sup", {}, m.ks.map(k => k + 1).join(",")) : null));
      pos = m.end;
    }
    text.append(p.text.slice(pos));
    box.append(h("div", {class: "passage", id: `passage-${i}`},
      h("div", {class: "src"}, h("b", {}, `#${p.rank}`), h("span", {class: "path", title: p.source}, p.source || "(no source)")),
      text));
  });
  const hint = box.querySelector("mark.hint");
  if (hint) hint.scrollIntoView({block: "nearest"});
}

function focusMark() {
  const el = document.querySelector("mark.focus");
  if (el) el.scrollIntoView({block: "center", behavior: "smooth"});
}

function render() {
  if (!view) return;
  const it = state.items[cur] || {};
  const stratum = state.strata[view.stratum];
  $("item-head").replaceChildren(...[
    h("b", {}, `Item ${cur + 1} of ${state.items.length}`),
    h("span", {class: "chip", title: `stratum of the ${state.stratified_by} judge's score; inclusion probability ${fmt(view.inclusion_prob)}`},
      `${state.stratified_by} ${view.stratum}` + (stratum ? ` · ${stratum.drawn} of ${stratum.items} drawn` : "")),
    it.done ? h("span", {class: "chip done"}, "labelled") : null,
    it.skipped && !it.done ? h("span", {class: "chip skipped"}, "skipped") : null,
    h("span", {class: "muted"}, view.item_id)].filter(Boolean));
  $("question").textContent = view.question;
  $("reference-box").hidden = !view.reference_answer || !view.tasks.some(t => t.kind !== "statements");
  $("reference").textContent = view.reference_answer || "";
  renderAnswer();
  renderTasks();
  renderContexts();
}

function renderProgress() {
  const pct = state.target ? Math.round(100 * state.labelled / state.target) : 0;
  $("bar-fill").style.width = pct + "%";
  $("progress-text").textContent = `${state.labelled} / ${state.target} labelled`;
}

function renderState() {
  renderProgress();
  $("run").textContent = `run ${state.run} · ${state.metrics.join(", ")} · seed ${state.seed}, stratified by ${state.stratified_by}`;
  const agree = $("agreement");
  agree.replaceChildren();
  for (const row of state.agreement) {
    if (!row.accuracy) {
      agree.append(h("div", {class: "fig"}, h("span", {class: "m"}, row.metric), h("div", {class: "muted"},
        `shown from 2 labels (n = ${row.n} so far)`)));
      continue;
    }
    agree.append(h("div", {class: "fig"}, h("span", {class: "m"}, row.metric),
      h("div", {}, "accuracy ", h("span", {class: "num"}, fmt(row.accuracy.value)), " ", h("span", {class: "ci"}, ci([row.accuracy.ci_low, row.accuracy.ci_high]))),
      h("div", {}, row.kappa_name + " ", h("span", {class: "num"}, fmt(row.kappa.value)), " ", h("span", {class: "ci"}, ci([row.kappa.ci_low, row.kappa.ci_high]))),
      h("div", {class: "n"}, `n = ${row.n} ${row.unit}` + (row.unit === "statements" ? ` (${row.items} items)` : "") + "; 95% bootstrap")));
  }
  const est = $("estimates");
  est.replaceChildren();
  let any = false;
  for (const row of state.estimates) {
    const lines = [h("span", {class: "m"}, row.metric),
      h("div", {}, "judge alone ", h("span", {class: "num"}, fmt(row.judge)), " ", h("span", {class: "ci"}, ci(row.judge_ci)))];
    if (row.score !== undefined) {
      any = true;
      lines.push(h("div", {}, "with your labels ", h("span", {class: "num"}, fmt(row.score)), " ", h("span", {class: "ci"}, ci(row.ci))));
      lines.push(h("div", {class: "n"}, `PPI++ from ${row.n_labels} labels and ${row.n_items} judged items; 95%`));
    } else {
      lines.push(h("div", {class: "muted"}, `${row.n_labels} label(s) of ${row.n_items} judged items: 2 needed`));
    }
    est.append(h("div", {class: "fig"}, ...lines));
  }
  const latest = $("latest");
  latest.replaceChildren();
  if (any) {
    const rec = state.latest;
    const recorded = rec && rec.labelled && Object.keys(rec.labelled).length;
    if (recorded) {
      const parts = Object.entries(rec.labelled).map(([m, e]) => `${m} ${fmt(e.score)} ${ci([e.ci_low, e.ci_high])} from ${e.n_labels} labels`);
      latest.append(h("p", {class: "muted"}, `Recorded by evaluation ${rec.run}: ${parts.join("; ")}. `,
        h("a", {href: "/report", target: "_blank", id: "report-link"}, "Open its report")));
    } else {
      latest.append(h("p", {class: "muted"}, "The next ", h("kbd", {}, "python run.py evaluate"),
        " records this estimate (no extra step)" + (rec ? "; " : "."),
        rec ? h("a", {href: "/report", target: "_blank", id: "report-link"}, `latest report (${rec.run})`) : null));
    }
  }
  const sync = state.sync || {};
  $("sync").textContent = `Every answer is stored at once in ${state.log.split("/").pop()}` +
    (sync.version ? ` · human_labels v${sync.version}` : "") + (sync.pending ? " · saving…" : "") +
    (sync.error ? ` · artifact not saved: ${sync.error}` : "");
}

async function poll() {
  const before = state && cur !== null ? state.items[cur] : null;
  await refreshState();
  const after = cur !== null ? state.items[cur] : null;
  // another tab labelled (or undid) the item shown: show its labels unless this tab is mid-answer
  if (before && after && before.done !== after.done && !marks.length && !relabel) {
    await show(cur);
    if (after.done) notice("This item was labelled in another tab.");
  }
}

async function start() {
  await refreshState();
  const fromHash = Number((location.hash.match(/item=(\d+)/) || [])[1]) - 1;
  const first = fromHash >= 0 ? fromHash : (state.next === null ? 0 : state.next);
  await show(first);
  if (state.next === null) notice(`All ${state.target} items are labelled.`);
  setInterval(() => run(poll), 5000);
}

run(start);
