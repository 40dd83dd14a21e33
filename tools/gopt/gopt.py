#!/usr/bin/env python3
"""G-Opt: a source-to-source transformer that hides DRAM latency in batched lookup code.

Implements the transformation of Kalia et al., "Raising the Bar for Using GPUs in Software
Packet Processing" (NSDI 2015), section 3.2. The input is a C function whose body is one
G_FOREACH(i, n) loop over a batch of independent lookups, with G_EXPENSIVE(addr) statements
placed before expensive memory accesses. The output is the same file with the body of every
such function replaced by interleaved code: at each G_EXPENSIVE the current lookup prefetches
addr, saves its resume point (GCC computed goto) and switches to the next lookup of the batch.

Usage: python3 tools/gopt/gopt.py INPUT.c -o OUTPUT.c [--max-batch N] [-I DIR]... [-D NAME[=V]]...
Exit code 0 on success, 2 with "FILE:LINE: reason" for input outside the accepted subset
(see tools/gopt/README.md). Needs pycparser (PyPI) and a C preprocessor (cc -E).
"""
import argparse
import copy
import os
import re
import shutil
import subprocess
import sys

try:
    from pycparser import c_ast, c_generator, c_parser
    from pycparser.plyparser import ParseError
except ImportError:  # pycparser >= 3 has no ply
    try:
        from pycparser import c_ast, c_generator, c_parser
        from pycparser.c_parser import ParseError
    except ImportError:
        c_ast = None

TOOL_DIR = os.path.dirname(os.path.abspath(__file__))
FAKE_INCLUDE = os.path.join(TOOL_DIR, "fake_include")
GOPT_H = os.path.join(TOOL_DIR, "gopt.h")

EXPENSIVE_FN = "__gopt_expensive"
PREFETCH_FN = "__gopt_prefetch"
INDEX_TYPE = "__gopt_index_t"
CUR = "gopt_I"  # the slot (0..gopt_B-1) of the lookup being executed


class GoptError(Exception):
    def __init__(self, file, line, msg):
        super().__init__(f"{file}:{line}: {msg}")


def fail(node, msg):
    c = node.coord if node is not None else None
    raise GoptError(c.file if c else "?", c.line if c else 0, msg)


# ----------------------------------------------------------------------------------------------
# AST helpers


class Raw(c_ast.Node if c_ast else object):
    """Verbatim C text (one or more lines), for what pycparser's AST cannot express:
    label addresses (&&label), computed goto (goto *p) and the prefetch builtin."""
    __slots__ = ("lines", "coord", "__weakref__")
    attr_names = ()

    def __init__(self, *lines):
        self.lines = list(lines)
        self.coord = None

    def children(self):
        return ()

    def __iter__(self):
        return iter(())


if c_ast:
    class Gen(c_generator.CGenerator):
        def visit_Raw(self, n):
            return ("\n" + self._make_indent()).join(n.lines)


def compound_literal(typename, init, coord):
    """c_ast.CompoundLiteral across pycparser versions: 3.12 added a `storage` field before coord."""
    try:
        return c_ast.CompoundLiteral(typename, init, [], coord)
    except TypeError:
        return c_ast.CompoundLiteral(typename, init, coord)


def node_fields(node):
    for attr in node.__slots__:
        if attr in ("coord", "__weakref__"):
            continue
        yield attr, getattr(node, attr)


def walk(node):
    """All nodes of a subtree, pre-order."""
    if node is None:
        return
    yield node
    for _, v in node_fields(node):
        if isinstance(v, c_ast.Node):
            yield from walk(v)
        elif isinstance(v, list):
            for x in v:
                if isinstance(x, c_ast.Node):
                    yield from walk(x)


def is_expensive(n):
    return (isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID)
            and n.name.name == EXPENSIVE_FN)


def is_prefetch(n):
    return (isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID)
            and n.name.name == PREFETCH_FN)


def is_foreach(n):
    if not isinstance(n, c_ast.For) or not isinstance(n.init, c_ast.DeclList):
        return False
    decls = n.init.decls
    if len(decls) != 1:
        return False
    t = decls[0].type
    return (isinstance(t, c_ast.TypeDecl) and isinstance(t.type, c_ast.IdentifierType)
            and t.type.names == [INDEX_TYPE])


def set_declname(t, name):
    while not isinstance(t, c_ast.TypeDecl):
        t = t.type
    t.declname = name


def strip_top_const(t):
    if isinstance(t, (c_ast.TypeDecl, c_ast.PtrDecl)):
        t.quals = [q for q in t.quals if q != "const"]


def base_of_lvalue(n, through_index=False):
    """The variable an lvalue designates storage of (through '.' and, optionally, [])."""
    while True:
        if isinstance(n, c_ast.StructRef) and n.type == ".":
            n = n.name
        elif through_index and isinstance(n, c_ast.ArrayRef):
            n = n.name
        else:
            return n if isinstance(n, c_ast.ID) else None


class Var:
    def __init__(self, name, kind, arrayed=False, is_array=False):
        self.name = name      # name in the generated code
        self.kind = kind      # 'local', 'param' or 'index'
        self.arrayed = arrayed  # lives across a G_EXPENSIVE: one copy per lookup
        self.is_array = is_array


# ----------------------------------------------------------------------------------------------
# The transformation of one batch function


class FuncXform:
    def __init__(self, fdef, foreach, names=None, refill=False):
        self.refill = refill    # a finished lookup's slot starts the next one (see body_refill)
        self.fdef = fdef
        self.foreach = foreach
        self.names = names      # orig name -> chosen name decisions (second run), or None
        self.scopes = []
        self.hoisted = []
        self.labels = 0
        self.decl_count = {}
        self.nonlocal_refs = set()
        self.all_names = set()
        self._has_exp = {}
        self.gen = Gen()
        fdecl = fdef.decl.type
        self.params = {}
        if fdecl.args is not None:
            for p in fdecl.args.params:
                if isinstance(p, c_ast.Decl) and p.name:
                    self.params[p.name] = Var(p.name, "param")
        idx = foreach.init.decls[0].name
        self.idx_orig = idx
        self.idx = Var("gopt_idx" if idx in self.params else idx, "index")

    # -- helpers
    def has_exp(self, n):
        if n is None:
            return False
        k = id(n)
        if k not in self._has_exp:
            self._has_exp[k] = any(is_expensive(x) for x in walk(n))
        return self._has_exp[k]

    def lookup(self, name):
        for s in reversed(self.scopes):
            if name in s:
                return s[name]
        if name == self.idx_orig:
            return self.idx
        return self.params.get(name)

    def new_label(self, what):
        self.labels += 1
        return f"gopt_{what}_{self.labels}"

    def pick_name(self, orig):
        self.decl_count[orig] = self.decl_count.get(orig, 0) + 1
        if self.names is None:
            return orig
        taken = self.all_names | set(self.names.values())
        if (self.decl_count_final.get(orig, 0) == 1 and orig not in self.nonlocal_final
                and orig not in self.params and orig != self.idx_orig):
            name = orig
        else:
            k = 1
            while f"{orig}_{k}" in taken:
                k += 1
            name = f"{orig}_{k}"
        self.names[(orig, self.decl_count[orig])] = name
        return name

    # -- expressions
    def expr(self, n):
        if n is None:
            return None
        if isinstance(n, c_ast.ID):
            self.all_names.add(n.name)
            if n.name.startswith("gopt_") or n.name.startswith("__gopt_"):
                fail(n, f"identifier '{n.name}' is reserved for the generated code")
            v = self.lookup(n.name)
            if v is None or v.kind != "local":
                self.nonlocal_refs.add(n.name)
            if v is None:
                return n
            if v.arrayed:
                return c_ast.ArrayRef(c_ast.ID(v.name, n.coord), c_ast.ID(CUR), n.coord)
            return c_ast.ID(v.name, n.coord)
        if isinstance(n, c_ast.FuncCall) and is_expensive(n):
            fail(n, "G_EXPENSIVE must be a statement of its own, not part of an expression")
        if is_prefetch(n):
            fail(n, "G_PREFETCH must be a statement of its own, not part of an expression")
        if isinstance(n, c_ast.StructRef):
            n.name = self.expr(n.name)
            return n
        if isinstance(n, c_ast.NamedInitializer):
            n.expr = self.expr(n.expr)
            return n
        if isinstance(n, c_ast.UnaryOp) and n.op == "&":
            b = base_of_lvalue(n.expr, through_index=True)
            if b is not None:
                v = self.lookup(b.name)
                if v is not None and v.kind == "local" and v.arrayed:
                    fail(n, f"address of local '{b.name}' is taken, but '{b.name}' lives across "
                            "G_EXPENSIVE (it becomes per-lookup state); not supported")
        target = None
        if isinstance(n, c_ast.Assignment):
            target = n.lvalue
        elif isinstance(n, c_ast.UnaryOp) and n.op in ("++", "--", "p++", "p--"):
            target = n.expr
        if target is not None:
            b = base_of_lvalue(target)
            if b is not None:
                v = self.lookup(b.name)
                if v is not None and v.kind == "param":
                    fail(n, f"assignment to parameter '{b.name}' inside G_FOREACH is not "
                            "supported (lookups must be independent)")
                if v is not None and v.kind == "index":
                    fail(n, f"assignment to the G_FOREACH index '{b.name}' is not supported")
        if isinstance(n, (c_ast.Typename, c_ast.Decl)):
            return n
        for attr, v in node_fields(n):
            if isinstance(v, c_ast.Node):
                setattr(n, attr, self.expr(v))
            elif isinstance(v, list):
                setattr(n, attr, [self.expr(x) if isinstance(x, c_ast.Node) else x for x in v])
        return n

    # -- declarations
    def decl(self, d, arrayed):
        if isinstance(d, c_ast.Typedef):
            fail(d, "typedef inside G_FOREACH is not supported")
        if "static" in d.storage:
            fail(d, f"static local '{d.name}' is not supported")
        if "extern" in d.storage or "_Thread_local" in d.storage:
            fail(d, f"extern/thread-local declaration '{d.name}' inside G_FOREACH is not supported")
        if d.name is None:
            fail(d, "type declarations inside G_FOREACH are not supported")
        if isinstance(d.type, c_ast.FuncDecl):
            fail(d, f"function declaration '{d.name}' inside G_FOREACH is not supported")
        if d.name.startswith("gopt_") or d.name.startswith("__gopt_"):
            fail(d, f"identifier '{d.name}' is reserved for the generated code")
        for x in walk(d.type):
            if isinstance(x, (c_ast.Struct, c_ast.Union, c_ast.Enum)) and (
                    getattr(x, "decls", None) is not None or getattr(x, "values", None) is not None):
                fail(d, "type definitions inside G_FOREACH are not supported")
            if isinstance(x, c_ast.ArrayDecl) and x.dim is not None:
                for y in walk(x.dim):
                    if isinstance(y, c_ast.ID) and self.lookup(y.name) is not None:
                        fail(d, f"variable-length array '{d.name}' is not supported")
        is_array = isinstance(d.type, c_ast.ArrayDecl)
        init = self.expr(d.init) if d.init is not None else None
        self.all_names.add(d.name)
        name = self.pick_name(d.name)
        self.scopes[-1][d.name] = Var(name, "local", arrayed, is_array)
        if not arrayed:
            nd = copy.copy(d)
            nd.name = name
            nd.type = copy.deepcopy(d.type)
            set_declname(nd.type, name)
            nd.storage = [s for s in d.storage if s not in ("register", "auto")]
            nd.init = init
            return [nd]
        t = copy.deepcopy(d.type)
        set_declname(t, name)
        strip_top_const(t)
        self.hoisted.append(c_ast.Decl(
            name, [q for q in d.quals if q != "const"], d.align, [], [],
            c_ast.ArrayDecl(t, c_ast.ID("GOPT_MAX_BATCH"), []), None, None, d.coord))
        if init is None:
            return []
        if isinstance(init, c_ast.InitList):
            if is_array:
                fail(d, f"initializer list for array '{d.name}' that lives across G_EXPENSIVE "
                        "is not supported (assign the elements instead)")
            tn = copy.deepcopy(d.type)
            set_declname(tn, None)
            strip_top_const(tn)
            init = compound_literal(c_ast.Typename(None, [], None, tn), init, d.coord)
        elif is_array:
            fail(d, f"initializer for array '{d.name}' that lives across G_EXPENSIVE is not supported")
        lhs = c_ast.ArrayRef(c_ast.ID(name), c_ast.ID(CUR))
        return [c_ast.Assignment("=", lhs, init, d.coord)]

    # -- statements
    def block(self, items, ctx):
        out = []
        for k, item in enumerate(items):
            if isinstance(item, (c_ast.Decl, c_ast.Typedef)):
                live = any(self.has_exp(x) for x in items[k + 1:])
                out += self.decl(item, live)
            else:
                out += self.stmt(item, ctx)
        return out

    def sub(self, n, ctx):
        """A statement in a position that takes exactly one statement."""
        if n is None:
            return None
        if isinstance(n, (c_ast.Decl, c_ast.Typedef)):
            fail(n, "a declaration is not allowed here")
        s = self.stmt(n, ctx)
        if len(s) == 1:
            return s[0]
        return c_ast.Compound(s, n.coord)

    def one_arg(self, call, what):
        args = call.args.exprs if call.args is not None else []
        if len(args) != 1:
            fail(call, f"{what} takes exactly one argument (the address)")
        for x in walk(args[0]):
            if isinstance(x, c_ast.Assignment) or (
                    isinstance(x, c_ast.UnaryOp) and x.op in ("++", "--", "p++", "p--")):
                fail(call, f"the {what} argument must not have side effects")
        return args[0]

    def pss(self, call):
        """Prefetch, Save the resume label, and Switch to the next lookup."""
        addr = self.gen.visit(self.expr(self.one_arg(call, "G_EXPENSIVE")))
        lab = self.new_label("resume")
        lines = [f"__builtin_prefetch({addr});", f"gopt_labels[{CUR}] = &&{lab};",
                 *self.switch_lines()]
        return [Raw(x) for x in lines] + [c_ast.Label(lab, c_ast.EmptyStatement())]

    def switch_lines(self):
        at = f"gopt_i[{CUR}]" if self.refill else f"gopt_base + {CUR}"
        return [f"{CUR} = {CUR} + 1 == gopt_B ? 0 : {CUR} + 1;",
                f"{self.idx.name} = {at};",
                f"goto *gopt_labels[{CUR}];"]

    def jump(self, n, ctx, kind):
        for c in reversed(ctx):
            if kind == "continue" and c[0] == "switch":
                continue
            if c[0] == "foreach":
                if kind == "break":
                    fail(n, "break out of G_FOREACH is not supported (it would end the whole "
                            "batch); use continue to finish one lookup")
                self.end_used = True
                return [c_ast.Goto("gopt_end", n.coord)]
            if c[0] in ("loop", "switch"):
                return [n]
            if c[0] == "lowered":
                target = c[1] if kind == "break" else c[2]
                c[3].add(target)
                return [c_ast.Goto(target, n.coord)]
        fail(n, f"{kind} outside a loop")

    def stmt(self, n, ctx):
        if isinstance(n, c_ast.Compound):
            self.scopes.append({})
            items = self.block(n.block_items or [], ctx)
            self.scopes.pop()
            return [c_ast.Compound(items, n.coord)]
        if is_expensive(n):
            return self.pss(n)
        if is_prefetch(n):
            return [Raw(f"__builtin_prefetch({self.gen.visit(self.expr(self.one_arg(n, 'G_PREFETCH')))});")]
        if is_foreach(n):
            fail(n, "nested G_FOREACH is not supported")
        if isinstance(n, (c_ast.Decl, c_ast.Typedef)):
            return self.decl(n, False)
        if isinstance(n, c_ast.If):
            return [c_ast.If(self.expr(n.cond), self.sub(n.iftrue, ctx),
                             self.sub(n.iffalse, ctx), n.coord)]
        if isinstance(n, (c_ast.For, c_ast.While, c_ast.DoWhile)):
            return self.loop(n, ctx)
        if isinstance(n, c_ast.Switch):
            cond = self.expr(n.cond)
            return [c_ast.Switch(cond, self.sub(n.stmt, ctx + [("switch",)]), n.coord)]
        if isinstance(n, (c_ast.Case, c_ast.Default)):
            stmts = []
            for s in n.stmts or []:
                if isinstance(s, (c_ast.Decl, c_ast.Typedef)):
                    fail(s, "declarations directly under a case label are not supported; "
                            "use a block")
                stmts += self.stmt(s, ctx)
            if isinstance(n, c_ast.Case):
                return [c_ast.Case(self.expr(n.expr), stmts, n.coord)]
            return [c_ast.Default(stmts, n.coord)]
        if isinstance(n, c_ast.Break):
            return self.jump(n, ctx, "break")
        if isinstance(n, c_ast.Continue):
            return self.jump(n, ctx, "continue")
        if isinstance(n, c_ast.Return):
            fail(n, "return inside G_FOREACH is not supported (it would end the whole batch); "
                    "use continue to finish one lookup")
        if isinstance(n, (c_ast.Goto, c_ast.Label)):
            fail(n, "goto and labels are not supported in G-Opt input")
        if isinstance(n, c_ast.EmptyStatement):
            return []
        if isinstance(n, c_ast.Pragma):
            return [n]
        if isinstance(n, (c_ast.Assignment, c_ast.FuncCall, c_ast.UnaryOp, c_ast.BinaryOp,
                          c_ast.TernaryOp, c_ast.Cast, c_ast.ExprList, c_ast.ID, c_ast.Constant,
                          c_ast.ArrayRef, c_ast.StructRef)):
            return [self.expr(n)]
        fail(n, f"unsupported statement ({type(n).__name__}) inside G_FOREACH")

    def loop(self, n, ctx):
        self.scopes.append({})  # the scope of a for-init declaration
        lowered = self.has_exp(n)
        out = []
        init = None
        if isinstance(n, c_ast.For):
            if isinstance(n.init, c_ast.DeclList):
                decls = []
                for d in n.init.decls:
                    decls += self.decl(d, lowered)
                if lowered:
                    out += decls
                else:
                    init = c_ast.DeclList(decls, n.init.coord)
            elif n.init is not None:
                init = self.expr(n.init)
                if lowered:
                    out.append(init)
        cond = self.expr(n.cond)
        nxt = self.expr(n.next) if isinstance(n, c_ast.For) else None
        if not lowered:
            body = self.sub(n.stmt, ctx + [("loop",)])
            self.scopes.pop()
            if isinstance(n, c_ast.For):
                return [c_ast.For(init, cond, nxt, body, n.coord)]
            if isinstance(n, c_ast.While):
                return [c_ast.While(cond, body, n.coord)]
            return [c_ast.DoWhile(cond, body, n.coord)]
        # A loop containing G_EXPENSIVE is lowered to labels and gotos:
        #   init; top: if (!cond) goto brk; body; cont: next; goto top; brk: ;
        top, cont, brk = self.new_label("top"), self.new_label("cont"), self.new_label("brk")
        used = set()
        body = self.sub(n.stmt, ctx + [("lowered", brk, cont, used)])
        self.scopes.pop()
        if isinstance(n, c_ast.DoWhile):
            out.append(c_ast.Label(top, c_ast.EmptyStatement()))
            out.append(body)
            if cont in used:
                out.append(c_ast.Label(cont, c_ast.EmptyStatement()))
            out.append(c_ast.If(cond, c_ast.Goto(top), None))
        else:
            out.append(c_ast.Label(top, c_ast.EmptyStatement()))
            if cond is not None:
                used.add(brk)
                out.append(c_ast.If(c_ast.UnaryOp("!", cond), c_ast.Goto(brk), None))
            out.append(body)
            if cont in used:
                out.append(c_ast.Label(cont, c_ast.EmptyStatement()))
            if nxt is not None:
                out.append(nxt)
            out.append(c_ast.Goto(top))
        if brk in used:
            out.append(c_ast.Label(brk, c_ast.EmptyStatement()))
        return out

    # -- the whole function body
    def body(self):
        fe = self.foreach
        count = fe.cond.right if isinstance(fe.cond, c_ast.BinaryOp) else None
        if count is None:
            fail(fe, "malformed G_FOREACH")
        self.scopes = [{}]
        self.end_used = False
        inner = self.stmt(fe.stmt, [("foreach",)])
        inner = inner[0] if len(inner) == 1 and isinstance(inner[0], c_ast.Compound) \
            else c_ast.Compound(inner)
        count_txt = self.gen.visit(count)
        i = self.idx.name
        if self.refill:
            return self.body_refill(inner, count_txt, i)
        chunk = c_ast.Compound([
            Raw("gopt_B = gopt_n - gopt_base < GOPT_MAX_BATCH ? gopt_n - gopt_base : GOPT_MAX_BATCH;",
                f"for ({CUR} = 0; {CUR} < gopt_B; {CUR}++)",
                f"  gopt_labels[{CUR}] = &&gopt_start;",
                "gopt_finished = 0;",
                f"{CUR} = 0;",
                f"{i} = gopt_base;"),
            c_ast.Label("gopt_start", inner),
            (lambda r: c_ast.Label("gopt_end", r) if self.end_used else r)(Raw(
                f"gopt_labels[{CUR}] = &&gopt_skip; /* this lookup is finished */")),
            Raw("if (++gopt_finished == gopt_B)", "  continue; /* the whole chunk is finished */"),
            c_ast.Label("gopt_skip", Raw(*self.switch_lines())),
        ])
        items = [Raw("/* G-Opt per-lookup state: locals that live across G_EXPENSIVE, "
                     f"indexed by {CUR} */")]
        items += self.hoisted
        items.append(Raw("void *gopt_labels[GOPT_MAX_BATCH]; /* resume point of each lookup */",
                         f"int {CUR}, gopt_B, gopt_base, gopt_finished;",
                         f"const int gopt_n = (int)({count_txt});",
                         f"int {i};"))
        items.append(c_ast.For(Raw("gopt_base = 0"), Raw("gopt_base < gopt_n"),
                               Raw("gopt_base += gopt_B"), chunk))
        return self.gen.visit(c_ast.Compound(items))


    def body_refill(self, inner, count_txt, i):
        """--refill: one pass over the whole batch with GOPT_MAX_BATCH slots. The paper's G-Opt
        runs fixed chunks, so a lookup that finishes early leaves its slot idle (visited and
        skipped) until the whole chunk is done; here it takes the next lookup of the batch at once,
        as AMAC does, and slots are skipped only once the batch has no lookups left to start.
        Each slot's lookup index is per-slot state (gopt_i)."""
        run = c_ast.Compound([
            Raw("gopt_B = gopt_n < GOPT_MAX_BATCH ? gopt_n : GOPT_MAX_BATCH;",
                f"for ({CUR} = 0; {CUR} < gopt_B; {CUR}++) {{",
                f"  gopt_labels[{CUR}] = &&gopt_start;",
                f"  gopt_i[{CUR}] = {CUR};",
                "}",
                "gopt_next = gopt_B;",
                "gopt_finished = 0;",
                f"{CUR} = 0;",
                f"{i} = 0;"),
            c_ast.Label("gopt_start", inner),
            (lambda r: c_ast.Label("gopt_end", r) if self.end_used else r)(Raw(
                "if (gopt_next < gopt_n) { /* this slot starts the next lookup at once */",
                f"  {i} = gopt_i[{CUR}] = gopt_next++;",
                "  goto gopt_start;",
                "}")),
            Raw(f"gopt_labels[{CUR}] = &&gopt_skip; /* no lookup left for this slot */",
                "if (++gopt_finished == gopt_B)",
                "  goto gopt_done; /* every slot is finished */"),
            c_ast.Label("gopt_skip", Raw(*self.switch_lines())),
        ])
        items = [Raw("/* G-Opt per-lookup state: locals that live across G_EXPENSIVE, "
                     f"indexed by the slot {CUR} */")]
        items += self.hoisted
        items.append(Raw("void *gopt_labels[GOPT_MAX_BATCH]; /* resume point of each slot's lookup */",
                         "int gopt_i[GOPT_MAX_BATCH]; /* the lookup each slot is running */",
                         f"int {CUR}, gopt_B, gopt_next, gopt_finished;",
                         f"const int gopt_n = (int)({count_txt});",
                         f"int {i};"))
        items.append(c_ast.If(Raw("gopt_n > 0"), run, None))
        items.append(c_ast.Label("gopt_done", c_ast.EmptyStatement()))
        return self.gen.visit(c_ast.Compound(items))


def transform_function(fdef, foreach, refill=False):
    # First run: collect names and check the subset; second run: emit with final names.
    fcopy = copy.deepcopy(fdef)
    probe = FuncXform(fcopy, [x for x in walk(fcopy.body) if is_foreach(x)][0], refill=refill)
    probe.body()
    x = FuncXform(fdef, foreach, names={}, refill=refill)
    x.decl_count_final = probe.decl_count
    x.nonlocal_final = probe.nonlocal_refs
    x.all_names = set(probe.all_names) | set(x.params)
    return x.body()


def check_function(fdef, path):
    foreachs = [n for n in walk(fdef.body) if is_foreach(n)]
    exps = [n for n in walk(fdef.body) if is_expensive(n) or is_prefetch(n)]
    fname = fdef.decl.name
    if not foreachs:
        if exps:
            fail(exps[0], f"G_EXPENSIVE/G_PREFETCH outside G_FOREACH (in function '{fname}'); annotations "
                          "must be in the batch function's G_FOREACH body, not in a called function")
        return None
    items = fdef.body.block_items or []
    top = [n for n in items if is_foreach(n)]
    if len(top) > 1:
        fail(top[1], f"only one G_FOREACH per function is supported (function '{fname}')")
    if len(foreachs) > 1 and top:
        others = [n for n in foreachs if n is not top[0]]
        fail(others[0], "nested G_FOREACH is not supported")
    if not top:
        fail(foreachs[0], f"G_FOREACH must be the whole body of function '{fname}'")
    if len(items) != 1:
        other = [n for n in items if n is not top[0]][0]
        fail(other if other.coord else top[0],
             f"G_FOREACH must be the whole body of function '{fname}' (found another "
             "statement or declaration in the function body)")
    ret = fdef.decl.type.type
    if not (isinstance(ret, c_ast.TypeDecl) and isinstance(ret.type, c_ast.IdentifierType)
            and ret.type.names == ["void"]):
        fail(fdef.decl, f"batch function '{fname}' must return void")
    return top[0]


# ----------------------------------------------------------------------------------------------
# Source text handling


def preprocess(path, incs, defs, cc):
    cmd = [cc, "-E", "-nostdinc", "-std=gnu11", "-I", FAKE_INCLUDE, "-DGOPT_TRANSFORMING",
           "-include", GOPT_H, "-I", TOOL_DIR,
           "-D__attribute__(x)=", "-D__extension__=", "-D__restrict=restrict",
           "-D__restrict__=restrict", "-D__inline=inline", "-D__inline__=inline",
           "-D__asm__(x)=", "-D__volatile__=volatile"]
    for d in incs:
        cmd += ["-I", d]
    for d in defs:
        cmd += ["-D" + d]
    cmd.append(path)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise GoptError(path, 0, f"cannot run the C preprocessor '{cc}': {e}")
    if r.returncode != 0:
        msg = r.stderr.strip().splitlines()
        first = next((m for m in msg if "error" in m), msg[0] if msg else "preprocessor failed")
        if "No such file" in first:
            first += (" (while parsing, only the stand-in system headers of "
                      "tools/gopt/fake_include are available; see README)")
        raise GoptError(path, 0, f"preprocessing failed: {first}") if not re.match(
            r"^[^:]+:\d+:", first) else _cpp_error(first)
    # pycparser does not know the GCC line-marker flags (`# 1 "f.c" 2`): drop them.
    return re.sub(r'^(# \d+ "[^"]*")[ \d]*$', r"\1", r.stdout, flags=re.M)


def _cpp_error(line):
    m = re.match(r"^([^:]+):(\d+):(?:\d+:)?\s*(.*)$", line)
    return GoptError(m.group(1), int(m.group(2)), m.group(3))


def skip_ws_comments(text, pos, want):
    """Index of the first `want` char at or after pos outside comments/strings, with () depth 0."""
    depth = 0
    n = len(text)
    while pos < n:
        c = text[pos]
        if text.startswith("//", pos):
            pos = text.find("\n", pos)
            pos = n if pos < 0 else pos
            continue
        if text.startswith("/*", pos):
            e = text.find("*/", pos + 2)
            pos = n if e < 0 else e + 2
            continue
        if c in "\"'":
            pos = skip_literal(text, pos)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == want and depth == 0:
            return pos
        pos += 1
    return -1


def skip_literal(text, pos):
    q = text[pos]
    pos += 1
    while pos < len(text) and text[pos] != q:
        pos += 2 if text[pos] == "\\" else 1
    return pos + 1


def matching_brace(text, pos):
    depth = 0
    n = len(text)
    while pos < n:
        if text.startswith("//", pos):
            pos = text.find("\n", pos)
            pos = n if pos < 0 else pos
            continue
        if text.startswith("/*", pos):
            e = text.find("*/", pos + 2)
            pos = n if e < 0 else e + 2
            continue
        c = text[pos]
        if c in "\"'":
            pos = skip_literal(text, pos)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return pos
        pos += 1
    return -1


def transform_file(path, incs=(), defs=(), max_batch=64, cc=None, refill=False):
    cc = cc or os.environ.get("CC") or "cc"
    if shutil.which(cc) is None and not os.path.exists(cc):
        raise GoptError(path, 0, f"C preprocessor '{cc}' not found (set CC)")
    src = open(path).read()
    pre = preprocess(path, incs, defs, cc)
    parser = c_parser.CParser()
    try:
        ast = parser.parse(pre, filename=path)
    except ParseError as e:
        m = re.match(r"^(.*?):(\d+):(?:\d+:)?\s*(.*)$", str(e))
        if m:
            raise GoptError(m.group(1), int(m.group(2)), f"syntax error: {m.group(3)}")
        # pycparser 3 reports some errors without a position: take the next token's.
        msg = str(e).split(": ", 1)[-1]
        try:
            tok = parser._peek()
            coord = parser._tok_coord(tok)
            raise GoptError(coord.file, coord.line, f"syntax error: {msg} before '{tok.value}'")
        except (AttributeError, TypeError):
            raise GoptError(path, 0, f"syntax error: {msg}")
    line_starts = [0]
    for ln in src.split("\n"):
        line_starts.append(line_starts[-1] + len(ln) + 1)
    edits = []
    main_file = None
    for ext in ast.ext:
        if not (isinstance(ext, c_ast.FuncDef) and ext.coord):
            continue
        if main_file is None and os.path.basename(ext.coord.file) == os.path.basename(path):
            main_file = ext.coord.file
        if ext.coord.file != main_file and os.path.abspath(ext.coord.file) != os.path.abspath(path):
            exps = [n for n in walk(ext.body) if is_expensive(n) or is_prefetch(n) or is_foreach(n)]
            if exps:
                fail(exps[0], "G-Opt annotations are only transformed in the input file itself")
            continue
        fe = check_function(ext, path)
        if fe is None:
            continue
        new_body = transform_function(ext, fe, refill)
        start = line_starts[ext.decl.coord.line - 1]
        lb = skip_ws_comments(src, start, "{")
        rb = matching_brace(src, lb) if lb >= 0 else -1
        if lb < 0 or rb < 0:
            fail(ext, f"cannot find the body of '{ext.decl.name}' in the source text "
                      "(a function defined through a macro is not supported)")
        edits.append((lb, rb + 1, new_body.rstrip("\n")))
    if not edits:
        raise GoptError(path, 1, "no function with G_FOREACH found")
    out = src
    for a, b, t in sorted(edits, reverse=True):
        out = out[:a] + t + out[b:]
    head = (f"/* Generated by tools/gopt/gopt.py from {os.path.basename(path)}: G-Opt interleaved "
            "version (NSDI'15, section 3.2)" + (", --refill" if refill else "") + ". Do not edit. */\n"
            f"#ifndef GOPT_MAX_BATCH\n#define GOPT_MAX_BATCH {max_batch}\n#endif\n")
    return head + out


def main(argv=None):
    p = argparse.ArgumentParser(description="G-Opt source-to-source transformer")
    p.add_argument("input")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--max-batch", type=int, default=64,
                   help="lookups interleaved at once (per-lookup array size; default 64)")
    p.add_argument("--refill", action="store_true",
                   help="a finished lookup's slot takes the next lookup of the batch at once, instead of "
                        "idling until its chunk of GOPT_MAX_BATCH is done (the paper's G-Opt)")
    p.add_argument("-I", dest="incs", action="append", default=[], help="include directory")
    p.add_argument("-D", dest="defs", action="append", default=[], help="macro definition")
    a = p.parse_args(argv)
    if c_ast is None:
        print("gopt: needs pycparser (python3 -m pip install pycparser)", file=sys.stderr)
        return 3
    if a.max_batch < 1:
        print("gopt: --max-batch must be >= 1", file=sys.stderr)
        return 2
    try:
        out = transform_file(a.input, a.incs, a.defs, a.max_batch, refill=a.refill)
    except GoptError as e:
        print(str(e), file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{a.input}:0: {e}", file=sys.stderr)
        return 2
    with open(a.output, "w") as f:
        f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
