/* One ticket's page (/tickets/<code>/): the print button. */
document.getElementById("print-button").addEventListener("click", () => window.print());
