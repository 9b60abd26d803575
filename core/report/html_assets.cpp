// The page's stylesheet and script, inline: the page loads nothing (its Content-Security-Policy
// forbids it) so that it can be attached to a CI run and opened anywhere.
#include "core/report/html_parts.h"

namespace dnnb::report {

const char* page_css() {
  return R"CSS(
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #eef1f4; --panel: #f6f8fa;
        --bad: #cf222e; --warn: #9a6700; --good: #1a7f37; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1320px; margin: 0 auto; padding: 20px 28px 40px; }
h1 { font-size: 26px; margin: 4px 0 6px; letter-spacing: -0.01em; }
h2 { font-size: 20px; margin: 40px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 22px 0 8px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
.muted { color: var(--muted); }
.mono, code { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.verdict { font-size: 15px; background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
           padding: 12px 16px; margin: 10px 0; }
.verdict .big { font-size: 22px; font-weight: 600; margin-right: 6px; }
.verdict table.headline { margin-top: 8px; font-size: 14px; }
.verdict table.headline th { background: none; font-weight: 500; color: var(--muted); }
.chip { display: inline-flex; align-items: center; gap: 6px; white-space: nowrap; }
.dot { display: inline-block; width: 10px; height: 10px; border-radius: 50%; }
nav.toc { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 8px 0 0; font-size: 13.5px; }
.notes { border-left: 4px solid #d4a72c; background: #fff8c5; padding: 8px 14px; margin: 12px 0; border-radius: 4px; }
.notes ul { margin: 4px 0; padding-left: 20px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(330px, 1fr)); gap: 12px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; background: #fff; }
.card .head { display: flex; align-items: baseline; gap: 8px; flex-wrap: wrap; }
.card .name { font-weight: 600; }
.card p { margin: 6px 0 0; font-size: 13px; }
.kind { display: inline-block; font-size: 11.5px; font-weight: 600; border-radius: 10px; padding: 0 8px;
        background: #ddf4ff; color: #0550ae; vertical-align: middle; }
.wrap { overflow-x: auto; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 9px; border-bottom: 1px solid var(--soft); text-align: left; vertical-align: top; }
th { font-weight: 600; background: var(--panel); border-bottom: 1px solid var(--line); white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
tbody tr:hover { background: #f6f8fa; }
table.sortable th { cursor: pointer; user-select: none; position: sticky; top: 0; z-index: 1; }
table.sortable th:hover { background: #eaeef2; }
table.sortable th::after { content: ""; color: var(--muted); }
table.sortable th[aria-sort="ascending"]::after { content: " \25B2"; }
table.sortable th[aria-sort="descending"]::after { content: " \25BC"; }
tr.highlight, tr.highlight:hover { background: #fff8c5; outline: 2px solid #d4a72c; }
.sol { min-width: 120px; }
.sol .bound { font-size: 11px; color: var(--muted); }
td.case { min-width: 230px; }
table.data td.reason { max-width: 260px; }
table.data, table.ceilings { width: 100%; }
table.data { font-size: 13px; }
table.data th, table.data td { padding: 4px 7px; }
table.ceilings td.reason { max-width: 520px; }
.bar { display: inline-block; width: 64px; height: 9px; background: var(--soft); border-radius: 2px;
       margin-right: 6px; vertical-align: middle; overflow: hidden; }
.bar i { display: block; height: 100%; border-radius: 2px; }
.badge { display: inline-block; font-size: 12px; border-radius: 10px; padding: 0 8px; white-space: nowrap; }
.badge.ok { background: #dafbe1; color: var(--good); }
.badge.skipped { background: var(--soft); color: var(--muted); }
.badge.unsupported { background: #fff8c5; color: #7d4e00; }
.badge.error, .badge.bad_input { background: #ffebe9; color: var(--bad); }
.flag { display: inline-block; font-size: 12px; background: #fff1e5; color: #bc4c00; border-radius: 4px;
        padding: 0 6px; margin: 1px 0; }
.reason { color: var(--muted); font-size: 13px; max-width: 560px; }
.reason .flag { font-size: 11.5px; }
input.filter { font: inherit; padding: 5px 10px; border: 1px solid var(--line); border-radius: 6px; width: 320px;
               margin: 0 0 10px; }
figure { margin: 8px 0 0; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: center; font-size: 13px; color: var(--fg);
          margin: 6px 0; }
.legend svg { vertical-align: middle; }
svg.chart { width: 100%; height: auto; display: block; font-family: inherit; }
svg.roofline-chart { max-width: 1000px; }
svg .plot-bg { fill: #fcfdfe; }
svg .grid { stroke: #e3e8ee; stroke-width: 1; }
svg .minor { stroke: #8c959f; stroke-width: 1; }
svg .frame { fill: none; stroke: #8c959f; stroke-width: 1; }
svg .tick { font-size: 11px; fill: var(--muted); }
svg .axis-title { font-size: 12px; fill: var(--fg); }
svg .roof { fill: none; stroke: #24292f; stroke-width: 2.2; }
svg .roof.theoretical { stroke: #6e7781; stroke-width: 1.5; stroke-dasharray: 7 5; }
svg .roof.cache { stroke: #6e7781; stroke-width: 1.5; stroke-dasharray: 2 4; }
svg .roof.secondary { stroke: #b6bec7; stroke-width: 1.4; }
svg text.roof-label, svg text.slope-label { font-size: 11px; fill: #24292f; }
svg text.theoretical, svg text.cache { fill: #57606a; }
svg text.secondary { fill: #8c959f; }
svg .slope-key rect { fill: #fff; fill-opacity: 0.92; stroke: var(--line); rx: 4px; }
svg .chart-note { font-size: 12px; fill: var(--muted); }
svg circle.point { cursor: pointer; }
svg circle.point:hover { stroke: #000; stroke-width: 2.6; }
svg circle.flag-ring { fill: none; stroke: var(--bad); stroke-width: 1.8; }
svg .floor { fill: none; stroke: #8c959f; stroke-width: 1.3; }
svg .floor.bandwidth { stroke-dasharray: 6 4; }
svg .floor.launch { stroke-dasharray: 2 3; }
svg .floor.ridge { stroke-dasharray: 1 3; }
svg .bound { fill: none; stroke-width: 1.4; stroke-dasharray: 5 3; stroke-opacity: 0.7; }
svg .floor-label { font-size: 10.5px; fill: var(--muted); }
svg .series { fill: none; stroke-width: 2; stroke-linejoin: round; }
svg circle.sweep-point { stroke: #fff; stroke-width: 1; cursor: pointer; }
.sweeps { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 22px 26px; }
.sweeps h3 { margin: 0 0 2px; font-size: 14px; }
.cmp td.best { font-weight: 600; color: var(--good); }
.cmp .ratio { color: var(--muted); font-size: 12px; margin-left: 4px; }
.cmp td.slow .ratio { color: var(--bad); }
.cmp tr.geomean td { border-top: 2px solid var(--line); font-weight: 600; background: var(--panel); }
footer { margin-top: 44px; padding-top: 10px; border-top: 1px solid var(--line); font-size: 12.5px; color: var(--muted); }
footer table td { border: 0; padding: 1px 10px 1px 0; }
footer h3 { font-size: 13px; margin: 12px 0 4px; color: var(--fg); }
)CSS";
}

// Sorting (click a header; missing values stay last either way), the table filter, points
// that find their row, and the count of roofline points the browser test reads.
const char* page_script() {
  return R"JS(
(function () {
  "use strict";
  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    var text = cell ? (cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent) : "";
    if (!numeric) return text.toLowerCase();
    if (text === "") return null;
    var n = Number(text);
    return isNaN(n) ? null : n;
  }
  function sortTable(table, index, descending) {
    var head = table.tHead.rows[0];
    var numeric = head.cells[index].getAttribute("data-type") === "num";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
      if (x === null || y === null) return x === y ? 0 : (x === null ? 1 : -1);
      var order = x < y ? -1 : (x > y ? 1 : 0);
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(head.cells, function (th) { th.removeAttribute("aria-sort"); });
    head.cells[index].setAttribute("aria-sort", descending ? "descending" : "ascending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.addEventListener("click", function () {
        sortTable(table, index, th.getAttribute("aria-sort") === "ascending");
      });
    });
  });
  var filter = document.getElementById("results-filter");
  var results = document.getElementById("results-table");
  if (filter && results) {
    filter.addEventListener("input", function () {
      var query = filter.value.toLowerCase();
      Array.prototype.forEach.call(results.tBodies[0].rows, function (row) {
        row.hidden = query !== "" && row.textContent.toLowerCase().indexOf(query) < 0;
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("circle[data-row]"), function (circle) {
    circle.addEventListener("click", function () {
      var row = document.getElementById(circle.getAttribute("data-row"));
      if (!row) return;
      Array.prototype.forEach.call(document.querySelectorAll("tr.highlight"), function (r) {
        r.classList.remove("highlight");
      });
      row.hidden = false;
      row.classList.add("highlight");
      row.scrollIntoView({block: "center"});
    });
  });
  document.body.dataset.pointsDrawn = String(document.querySelectorAll("svg circle.point").length);
})();
)JS";
}

}  // namespace dnnb::report
