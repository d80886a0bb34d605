# Runs once inside an R kernel (IRkernel; sent as a silent cell). Defines tool()/tools(): a
# request travels as readline() with a marked prompt, which IRkernel sends as an input_request;
# the host answers with JSON (jsonlite comes with IRkernel).
local({
  marker <- "__MARKER__"
  ask <- function(payload) {
    raw <- readline(paste0(marker, jsonlite::toJSON(payload, auto_unbox = TRUE, null = "null")))
    jsonlite::fromJSON(raw, simplifyVector = FALSE)
  }
  as_args <- function(args) {
    if (length(args) == 0) structure(list(), names = character(0)) else as.list(args)
  }
  result <- function(reply) {
    structure(list(ok = isTRUE(reply$ok), text = as.character(reply$text %||% ""),
                   data = reply$data, images = reply$images), class = "ToolResult")
  }
  `%||%` <- function(a, b) if (is.null(a)) b else a
  assign("tool", function(name, args = list()) {
    r <- result(ask(list(call = list(name, as_args(args)))))
    if (!r$ok) stop(structure(class = c("ToolError", "error", "condition"),
                              list(message = r$text, call = NULL)))
    r
  }, envir = globalenv())
  assign("tools", function(calls) {
    batch <- lapply(calls, function(c) list(c[[1]], as_args(if (length(c) > 1) c[[2]] else list())))
    lapply(ask(list(batch = batch))$results, result)
  }, envir = globalenv())
  assign("print.ToolResult", function(x, ...) invisible(cat(x$text, "\n", sep = "")),
         envir = globalenv())
  assign("repr_text.ToolResult", function(obj, ...) obj$text, envir = globalenv())
  for (kind in c("html", "markdown", "latex")) {
    assign(paste0("repr_", kind, ".ToolResult"), function(obj, ...) NULL, envir = globalenv())
  }
})
