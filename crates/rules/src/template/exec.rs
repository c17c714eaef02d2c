//! Runs a parsed template over a value, as Go's text/template executes.

use super::funcs::{self, Context};
use super::parse::{Branch, Cmd, Node, Operand, Pipe, Tree};
use super::value::Value;

/// The limit on nested template calls. Go allows 100000; evaluation threads
/// have small stacks, so a self-calling template must stop far sooner.
const MAX_DEPTH: usize = 200;

pub struct ExecError {
    pub pos: usize,
    /// The node where it happened, as Go prints it.
    pub context: String,
    pub message: String,
}

enum Flow {
    Normal,
    Break,
    Continue,
}

pub fn execute(tree: &Tree, data: Value, ctx: &Context<'_>) -> Result<String, ExecError> {
    let mut exec = Exec {
        tree,
        ctx,
        vars: vec![(String::new(), data.clone())],
        out: String::new(),
        depth: 0,
    };
    exec.list(&tree.root, &data)?;
    Ok(exec.out)
}

struct Exec<'a> {
    tree: &'a Tree,
    ctx: &'a Context<'a>,
    vars: Vec<(String, Value)>,
    out: String,
    depth: usize,
}

type Res<T> = Result<T, ExecError>;

fn err(pos: usize, context: String, message: impl Into<String>) -> ExecError {
    ExecError {
        pos,
        context,
        message: message.into(),
    }
}

impl Exec<'_> {
    fn list(&mut self, nodes: &[Node], dot: &Value) -> Res<Flow> {
        for node in nodes {
            match self.node(node, dot)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn node(&mut self, node: &Node, dot: &Value) -> Res<Flow> {
        match node {
            Node::Text(t) => self.out.push_str(t),
            Node::Action(pipe) => {
                let v = self.pipe(pipe, dot)?;
                if pipe.decl.is_empty() {
                    match v {
                        Value::Nil => self.out.push_str("<no value>"),
                        v => self.out.push_str(&v.print()),
                    }
                }
            }
            Node::If(b) => return self.if_with(b, dot, false),
            Node::With(b) => return self.if_with(b, dot, true),
            Node::Range(b) => return self.range(b, dot),
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
            Node::Template { pos, name, pipe } => {
                let Some(body) = self.tree.defines.get(name) else {
                    return Err(err(
                        *pos,
                        format!("template {name:?}"),
                        format!("no such template {name:?}"),
                    ));
                };
                let new_dot = match pipe {
                    Some(p) => self.pipe(p, dot)?,
                    None => Value::Nil,
                };
                if self.depth >= MAX_DEPTH {
                    return Err(err(
                        *pos,
                        format!("template {name:?}"),
                        format!("exceeded maximum template depth ({MAX_DEPTH})"),
                    ));
                }
                self.depth += 1;
                let saved = std::mem::replace(&mut self.vars, vec![(String::new(), new_dot.clone())]);
                let result = self.list(body, &new_dot);
                self.vars = saved;
                self.depth -= 1;
                result?;
            }
        }
        Ok(Flow::Normal)
    }

    fn if_with(&mut self, b: &Branch, dot: &Value, with: bool) -> Res<Flow> {
        let scope = self.vars.len();
        let v = self.pipe(&b.pipe, dot)?;
        let flow = if v.truth() {
            let inner = if with { v } else { dot.clone() };
            self.list(&b.list, &inner)?
        } else if let Some(else_list) = &b.else_list {
            self.list(else_list, dot)?
        } else {
            Flow::Normal
        };
        self.vars.truncate(scope);
        Ok(flow)
    }

    fn range(&mut self, b: &Branch, dot: &Value) -> Res<Flow> {
        let scope = self.vars.len();
        // The pipeline's own declaration names the key and element, not its result.
        let v = self.pipe_value(&b.pipe, dot)?;
        let items: Vec<(Value, Value)> = match &v {
            Value::Samples(s) => s
                .iter()
                .enumerate()
                .map(|(i, e)| (Value::Int(i as i64), Value::Sample(e.clone())))
                .collect(),
            Value::StrMap(m) => m
                .iter()
                .map(|(k, v)| (Value::Str(k.clone()), Value::Str(v.clone())))
                .collect(),
            Value::Map(m) => m.iter().map(|(k, v)| (Value::Str(k.clone()), v.clone())).collect(),
            Value::Int(n) => (0..*n).map(|i| (Value::Int(i), Value::Int(i))).collect(),
            Value::Nil => Vec::new(),
            other => {
                return Err(err(
                    b.pipe.pos,
                    pipe_string(&b.pipe),
                    format!("range can't iterate over {}", other.print()),
                ));
            }
        };
        let mut flow = Flow::Normal;
        if items.is_empty() {
            if let Some(else_list) = &b.else_list {
                flow = self.list(else_list, dot)?;
            }
        } else {
            for (key, elem) in items {
                match b.pipe.decl.as_slice() {
                    [] => {}
                    [e] => self.vars.push((e.clone(), elem.clone())),
                    [_, _, ..] if matches!(v, Value::Int(_)) => {
                        return Err(err(
                            b.pipe.pos,
                            pipe_string(&b.pipe),
                            format!("can't use {} to iterate over more than one variable", v.print()),
                        ));
                    }
                    [k, e, ..] => {
                        self.vars.push((k.clone(), key));
                        self.vars.push((e.clone(), elem.clone()));
                    }
                }
                let f = self.list(&b.list, &elem)?;
                self.vars.truncate(scope);
                if let Flow::Break = f {
                    break;
                }
            }
        }
        self.vars.truncate(scope);
        if let Flow::Break | Flow::Continue = flow {
            return Ok(flow);
        }
        Ok(Flow::Normal)
    }

    /// A pipeline's value, declaring or assigning its variables.
    fn pipe(&mut self, pipe: &Pipe, dot: &Value) -> Res<Value> {
        let v = self.pipe_value(pipe, dot)?;
        for name in &pipe.decl {
            if pipe.assign {
                if let Some(slot) = self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    slot.1 = v.clone();
                }
            } else {
                self.vars.push((name.clone(), v.clone()));
            }
        }
        Ok(v)
    }

    fn pipe_value(&mut self, pipe: &Pipe, dot: &Value) -> Res<Value> {
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            value = Some(self.command(cmd, dot, value)?);
        }
        Ok(value.unwrap_or(Value::Nil))
    }

    fn command(&mut self, cmd: &Cmd, dot: &Value, last: Option<Value>) -> Res<Value> {
        let Some((pos, first)) = cmd.args.first() else {
            return Ok(Value::Nil);
        };
        if let Operand::Func(name) = first {
            return self.call(cmd.pos, name, cmd, dot, last);
        }
        if cmd.args.len() > 1 || last.is_some() {
            return Err(err(
                *pos,
                operand_string(first),
                format!("can't give argument to non-function {}", operand_string(first)),
            ));
        }
        if let Operand::Nil = first {
            return Err(err(*pos, cmd_string(cmd), "nil is not a command"));
        }
        self.operand(*pos, first, dot)
    }

    fn call(&mut self, pos: usize, name: &str, cmd: &Cmd, dot: &Value, last: Option<Value>) -> Res<Value> {
        let operands = &cmd.args[1..];
        // `and` and `or` stop at the first argument that decides them.
        if name == "and" || name == "or" {
            let count = operands.len() + usize::from(last.is_some());
            if count == 0 {
                return Err(err(
                    pos,
                    cmd_string(cmd),
                    format!("wrong number of args for {name}: want at least 1 got 0"),
                ));
            }
            let mut v = Value::Nil;
            for (p, op) in operands {
                v = self.operand(*p, op, dot)?;
                if v.truth() != (name == "and") {
                    return Ok(v);
                }
            }
            return Ok(last.unwrap_or(v));
        }
        let mut args = Vec::with_capacity(operands.len() + 1);
        for (p, op) in operands {
            args.push(self.operand(*p, op, dot)?);
        }
        args.extend(last);
        funcs::check_args(name, &args).map_err(|m| err(pos, cmd_string(cmd), m))?;
        funcs::call(name, &args, self.ctx).map_err(|m| err(pos, cmd_string(cmd), format!("error calling {name}: {m}")))
    }

    fn operand(&mut self, pos: usize, op: &Operand, dot: &Value) -> Res<Value> {
        let fields_of = |start: Value, fields: &[String], context: &dyn Fn() -> String| {
            let mut v = start;
            for f in fields {
                v = v.field(f).map_err(|m| err(pos, context(), m))?;
            }
            Ok(v)
        };
        match op {
            Operand::Dot => Ok(dot.clone()),
            Operand::Nil => Ok(Value::Nil),
            Operand::Bool(b) => Ok(Value::Bool(*b)),
            Operand::Int(i) => Ok(Value::Int(*i)),
            Operand::Float(f, _) => Ok(Value::Float(*f)),
            Operand::Str(s) => Ok(Value::Str(s.clone())),
            Operand::Field(fields) => fields_of(dot.clone(), fields, &|| operand_string(op)),
            Operand::Var(name, fields) => {
                let v = self
                    .vars
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| err(pos, operand_string(op), format!("undefined variable: ${name}")))?;
                fields_of(v, fields, &|| operand_string(op))
            }
            Operand::Func(name) => {
                let cmd = Cmd {
                    pos,
                    args: vec![(pos, op.clone())],
                };
                self.call(pos, name, &cmd, dot, None)
            }
            Operand::Chain(inner, fields) => {
                let v = self.operand(pos, inner, dot)?;
                fields_of(v, fields, &|| operand_string(op))
            }
            Operand::Pipe(p) => {
                let scope = self.vars.len();
                let v = self.pipe(p, dot);
                self.vars.truncate(scope);
                v
            }
        }
    }
}

pub fn pipe_string(p: &Pipe) -> String {
    let mut out = String::new();
    if !p.decl.is_empty() {
        let names: Vec<String> = p.decl.iter().map(|n| format!("${n}")).collect();
        out.push_str(&names.join(", "));
        out.push_str(if p.assign { " = " } else { " := " });
    }
    let cmds: Vec<String> = p.cmds.iter().map(cmd_string).collect();
    out.push_str(&cmds.join(" | "));
    out
}

pub fn cmd_string(c: &Cmd) -> String {
    let parts: Vec<String> = c.args.iter().map(|(_, a)| operand_string(a)).collect();
    parts.join(" ")
}

pub fn operand_string(op: &Operand) -> String {
    match op {
        Operand::Dot => ".".into(),
        Operand::Nil => "nil".into(),
        Operand::Bool(b) => b.to_string(),
        Operand::Int(i) => i.to_string(),
        Operand::Float(_, text) => text.clone(),
        Operand::Str(s) => super::format::go_quote(s),
        Operand::Field(fs) => fs.iter().map(|f| format!(".{f}")).collect(),
        Operand::Var(n, fs) => format!("${n}{}", fs.iter().map(|f| format!(".{f}")).collect::<String>()),
        Operand::Func(n) => n.clone(),
        Operand::Chain(inner, fs) => {
            format!(
                "{}{}",
                operand_string(inner),
                fs.iter().map(|f| format!(".{f}")).collect::<String>()
            )
        }
        Operand::Pipe(p) => format!("({})", pipe_string(p)),
    }
}
