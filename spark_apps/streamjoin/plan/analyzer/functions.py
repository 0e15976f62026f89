"""SQL user-defined functions (issue 68): `CREATE FUNCTION f(a INT, b INT) RETURNS INT LANGUAGE
SQL AS $$ SELECT a + b $$` (RisingWave, PostgreSQL; the body may name its parameters or read
them as $1, $2, ...; `AS 'select ...'` and `RETURN expr` too) is inlined where it is called: the
call is the body's one expression with each parameter the call's argument, as RisingWave plans
a SQL function. The expression keeps its own type (the declared types cast nothing). A function
in another language (Python, Java, JavaScript, Rust, WebAssembly, s-Server's Java UDXs) runs
inside its system and is refused naming the language."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from streamjoin.plan.scope import ident_name, relation_name

_BODY = re.compile(r"\bAS\s+(?:\$(?P<tag>\w*)\$(?P<dollar>.*?)\$(?P=tag)\$|'(?P<quoted>(?:[^']|'')*)')", re.IGNORECASE | re.DOTALL)
_RETURN = re.compile(r"\bRETURN\s+(?P<expr>.*)$", re.IGNORECASE | re.DOTALL)
_LANGUAGE = re.compile(r"\bLANGUAGE\s+'?(?P<lang>\w+)'?", re.IGNORECASE)
MAX_DEPTH = 16  # functions calling functions, inlined in turn (a function that calls itself never ends)


@dataclass(frozen=True)
class Function:
    name: str
    parameters: tuple[str, ...]
    body: exp.Expression  # over the parameters' names


def define(analyzer, st: exp.Create) -> None:
    """The function a CREATE FUNCTION declares, kept by name (`analyzer.functions`); refused where
    it is not SQL of one expression."""
    name = relation_name(st.this).split(".")[-1]
    text = st.meta.get("definition", "")
    params, rest = _signature(text)
    language = _LANGUAGE.search(rest)
    body_match, returned = _BODY.search(rest), _RETURN.search(rest)
    lang = language.group("lang").lower() if language else ("sql" if returned or body_match and not re.search(
        r"\bEXTERNAL\s+NAME\b", rest, re.IGNORECASE) else "java")
    if lang == "java":
        analyzer.where.fail(f"CREATE FUNCTION {relation_name(st.this)}: user-defined functions are not supported "
                            "(a Java UDX runs inside s-Server; streamjoin runs SQL's built-in functions)", st,
                            "compute what the function gives before the data reaches streamjoin, or drop its use")
    if lang != "sql" or params is None or not (body_match or returned):
        analyzer.where.fail(f"CREATE FUNCTION {name}: a function in LANGUAGE {lang} is not supported (it runs inside "
                            "its system; streamjoin inlines SQL functions of one expression)", st,
                            "write it as LANGUAGE SQL of one expression, compute it before the data reaches streamjoin, "
                            "or drop its use")
    names = tuple(p.split()[0] if len(p.split()) > 1 else f"_p{n + 1}" for n, p in enumerate(params))
    if returned:
        source = f"SELECT {returned.group('expr').strip().rstrip(';')}"
    else:
        source = body_match.group("dollar") if body_match.group("dollar") is not None else body_match.group("quoted").replace("''", "'")
    source = re.sub(r"\$(\d+)\b", lambda m: names[int(m.group(1)) - 1] if 0 < int(m.group(1)) <= len(names) else m.group(0),
                    source.strip().rstrip(";"))
    from streamjoin.dialect import parse_script
    from streamjoin.errors import SqlError

    try:
        parsed = parse_script(source, analyzer.where.filename)
    except SqlError as error:
        analyzer.where.fail(f"CREATE FUNCTION {name}: its body does not read as SQL: {error.message}", st,
                            "write the body as SELECT <expression>")
    select = parsed[0] if len(parsed) == 1 else None
    if not isinstance(select, exp.Select) or select.args.get("from_") is not None or len(select.expressions) != 1 \
            or any(select.args.get(k) for k in ("where", "group", "having", "order", "limit")):
        analyzer.where.fail(f"CREATE FUNCTION {name}: a SQL function's body is one expression (SELECT <expression>) "
                            "here; a body that reads tables or has several statements is not supported", st,
                            "write the query where the function is called, or join a view")
    body = select.expressions[0]
    analyzer.functions[name.lower()] = Function(name.lower(), tuple(ident_name(n) for n in names),
                                                body.this if isinstance(body, exp.Alias) else body)


def _signature(text: str) -> tuple[list[str] | None, str]:
    """The parameters written between the signature's parentheses (each `name type` or `type`), and the rest."""
    text = text.strip()
    if not text.startswith("("):
        return None, text
    depth = 0
    for n, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            inside, parts, level, current = text[1:n], [], 0, ""
            for c in inside:
                level += {"(": 1, ")": -1}.get(c, 0)
                if c == "," and level == 0:
                    parts.append(current.strip())
                    current = ""
                else:
                    current += c
            if current.strip():
                parts.append(current.strip())
            parts = [re.sub(r"^(IN|INOUT)\s+", "", p, flags=re.IGNORECASE) for p in parts]
            return parts, text[n + 1:]
    return None, text


def inline(analyzer, node: exp.Expression) -> exp.Expression:
    """`node` with every call of a declared SQL function replaced by its body."""
    functions: dict[str, Function] = analyzer.functions
    if not functions:
        return node
    for _ in range(MAX_DEPTH):
        if not any(str(c.this).lower() in functions for c in node.find_all(exp.Anonymous)):
            return node
        node = node.copy()
        for call in [c for c in node.find_all(exp.Anonymous) if str(c.this).lower() in functions]:
            function = functions[str(call.this).lower()]
            if len(call.expressions) != len(function.parameters):
                analyzer.where.fail(f"{function.name} takes {len(function.parameters)} argument(s); this call gives "
                                    f"{len(call.expressions)}", call, "call it as its CREATE FUNCTION declares it")
            values = dict(zip(function.parameters, call.expressions, strict=True))
            body = function.body.copy()
            for col in list(body.find_all(exp.Column)):
                if not col.table and ident_name(col.this) in values:
                    col.replace(exp.Paren(this=values[ident_name(col.this)].copy()))
            call.replace(exp.Paren(this=body))
    analyzer.where.fail(f"a SQL function calls itself, or functions nest more than {MAX_DEPTH} deep", node,
                        "write the expression out")
