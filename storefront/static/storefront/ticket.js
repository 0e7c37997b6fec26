/* One ticket's page (/tickets/<code>/): the print button (a valid ticket only). */
const print = document.getElementById("print-button");
if (print) print.addEventListener("click", () => window.print());
