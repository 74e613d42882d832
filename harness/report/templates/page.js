(function () {
  "use strict";
  function each(selector, fn) { Array.prototype.forEach.call(document.querySelectorAll(selector), fn); }
  each("select[data-grids]", function (select) {
    select.addEventListener("change", function () {
      each("#" + select.dataset.grids + " [data-grid]", function (grid) {
        grid.hidden = grid.dataset.grid !== select.value;
      });
    });
  });
  each("form[data-filter]", function (form) {
    var rows = document.getElementById(form.dataset.filter).tBodies[0].rows;
    var count = form.querySelector("[data-count]");
    function apply() {
      var wanted = Array.prototype.filter.call(form.elements, function (s) { return s.value; });
      var shown = 0;
      Array.prototype.forEach.call(rows, function (row) {
        var keep = wanted.every(function (s) {
          return "=" + row.cells[Number(s.dataset.column)].textContent === s.value;
        });
        row.hidden = !keep;
        shown += keep ? 1 : 0;
      });
      count.textContent = shown.toLocaleString("en-US");
    }
    form.addEventListener("change", apply);
    form.addEventListener("reset", function () { setTimeout(apply, 0); });
  });
})();
