// Forms generated from a tool's input schema, and the mod's field errors shown next to the fields.
"use strict";

const Forms = (() => {
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  // A local reference (#/$defs/X, #/definitions/X) resolved against the root schema.
  function resolve(schema, root) {
    let seen = 0;
    while (schema && typeof schema.$ref === "string" && seen++ < 16) {
      const path = schema.$ref.replace(/^#\//, "").split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
      let target = root;
      for (const part of path) target = target && target[part];
      if (!target) return schema;
      const { $ref, ...rest } = schema;
      schema = { ...target, ...rest };
    }
    if (schema && Array.isArray(schema.allOf) && schema.allOf.length === 1) {
      const { allOf, ...rest } = schema;
      return resolve({ ...allOf[0], ...rest }, root);
    }
    return schema || {};
  }

  // The choices of an enum, written as enum, or as oneOf/anyOf of constants.
  function choices(schema) {
    if (Array.isArray(schema.enum)) return schema.enum;
    for (const key of ["oneOf", "anyOf"]) {
      const options = schema[key];
      if (!Array.isArray(options) || options.length === 0) continue;
      const values = [];
      for (const option of options) {
        if ("const" in option) values.push(option.const);
        else if (Array.isArray(option.enum)) values.push(...option.enum);
        else return null;
      }
      return values;
    }
    return null;
  }

  function typeOf(schema) {
    const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
    return type || (schema.properties ? "object" : null);
  }

  // The kind of input for a property: select, number, text, boolean, or json for the rest.
  function kindOf(schema) {
    if (choices(schema)) return "select";
    const type = typeOf(schema);
    if (type === "integer" || type === "number") return "number";
    if (type === "string") return "text";
    if (type === "boolean") return "boolean";
    return "json";
  }

  function describeType(schema, kind) {
    const type = typeOf(schema) || "any JSON";
    const bounds = [];
    if (schema.minimum !== undefined) bounds.push(`>= ${schema.minimum}`);
    if (schema.maximum !== undefined) bounds.push(`<= ${schema.maximum}`);
    if (kind === "select") return `one of ${choices(schema).length}`;
    return bounds.length ? `${type}, ${bounds.join(", ")}` : type;
  }

  function fieldFor(name, schema, required) {
    const kind = kindOf(schema);
    const id = `f-${Math.random().toString(36).slice(2)}`;
    const label = el("label", { for: id },
      name, required ? el("span", { class: "required", text: " *", title: "required" }) : null,
      el("span", { class: "type", text: ` (${describeType(schema, kind)})` }));
    let input;
    const hasDefault = schema.default !== undefined;
    if (kind === "select" || kind === "boolean") {
      const values = kind === "boolean" ? [true, false] : choices(schema);
      input = el("select", { id, name });
      if (!required || !hasDefault) input.append(el("option", { value: "", text: hasDefault ? `(default: ${JSON.stringify(schema.default)})` : "(not set)" }));
      values.forEach((value, index) => {
        input.append(el("option", { value: String(index), text: typeof value === "string" ? value : JSON.stringify(value) }));
      });
      input.dataset.values = JSON.stringify(values);
    } else if (kind === "json") {
      input = el("textarea", { id, name, placeholder: hasDefault ? JSON.stringify(schema.default) : "JSON" });
    } else {
      input = el("input", {
        id, name, type: "text", autocomplete: "off",
        inputmode: kind === "number" ? (typeOf(schema) === "integer" ? "numeric" : "decimal") : null,
        placeholder: hasDefault ? `default: ${schema.default}` : null,
      });
    }
    input.dataset.kind = kind;
    const help = schema.description || schema.title;
    return el("div", { class: "field", "data-field": name },
      label, input, help ? el("div", { class: "help", text: help }) : null,
      el("div", { class: "field-error", role: "alert" }));
  }

  // The value of one input: undefined when left empty (the mod's default applies).
  function readField(input) {
    const text = input.value;
    switch (input.dataset.kind) {
      case "select":
      case "boolean":
        return text === "" ? undefined : JSON.parse(input.dataset.values)[Number(text)];
      case "number": {
        if (text.trim() === "") return undefined;
        const number = Number(text);
        // Not a number: sent as typed, the mod says what is wrong with it.
        return Number.isFinite(number) ? number : text;
      }
      case "json":
        if (text.trim() === "") return undefined;
        try {
          return JSON.parse(text);
        } catch (e) {
          throw { field: input.name, message: `not valid JSON: ${e.message}` };
        }
      default:
        return text === "" ? undefined : text;
    }
  }

  function build(tool, onSubmit) {
    const root = tool.inputSchema || {};
    const schema = resolve(root, root);
    const properties = schema.properties || {};
    const required = new Set(schema.required || []);
    const names = Object.keys(properties);
    const form = el("form", { class: "tool-form", "data-tool": tool.name, novalidate: true });
    const fields = el("div", { class: "fields" });
    for (const name of names) fields.append(fieldFor(name, resolve(properties[name], root), required.has(name)));
    if (names.length === 0) fields.append(el("p", { class: "muted", text: "No arguments." }));
    const rawToggle = el("input", { type: "checkbox", class: "raw-toggle" });
    const raw = el("textarea", { class: "raw-json", name: "__raw", hidden: true, placeholder: "{}" });
    const rawField = el("div", { class: "field", "data-field": "" }, raw, el("div", { class: "field-error", role: "alert" }));
    // What the form cannot express (other members, composite schemas) goes through the JSON editor.
    const formCanExpress = schema.additionalProperties === false || names.length > 0 || typeOf(schema) === "object";
    rawToggle.checked = !formCanExpress;
    const sync = () => {
      if (rawToggle.checked) {
        try {
          raw.value = JSON.stringify(collect(form), null, 2);
        } catch (e) {
          raw.value = "{}";
        }
      }
      fields.hidden = rawToggle.checked;
      raw.hidden = !rawToggle.checked;
    };
    rawToggle.addEventListener("change", sync);
    form.append(fields, rawField,
      el("div", { class: "buttons" },
        el("button", { type: "submit", class: "call", text: "Call" }),
        el("label", {}, rawToggle, " edit as JSON")));
    sync();
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      clearErrors(form);
      let args;
      try {
        args = collect(form);
      } catch (e) {
        showFieldError(form, e.field, e.message);
        return;
      }
      onSubmit(args);
    });
    return form;
  }

  function collect(form) {
    const toggle = form.querySelector(".raw-toggle");
    if (toggle && toggle.checked) {
      const text = form.querySelector(".raw-json").value.trim() || "{}";
      try {
        return JSON.parse(text);
      } catch (e) {
        throw { field: "", message: `not valid JSON: ${e.message}` };
      }
    }
    const args = {};
    for (const input of form.querySelectorAll(".fields [name]")) {
      const value = readField(input);
      if (value !== undefined) args[input.name] = value;
    }
    return args;
  }

  function clearErrors(form) {
    for (const field of form.querySelectorAll(".field")) {
      field.classList.remove("invalid");
      field.querySelector(".field-error").textContent = "";
    }
  }

  function showFieldError(form, name, message) {
    let field = form.querySelector(`.field[data-field="${CSS.escape(name)}"]`);
    if (!field || field.closest("[hidden]")) field = form.querySelector('.field[data-field=""]');
    if (!field) return false;
    field.classList.add("invalid");
    const box = field.querySelector(".field-error");
    box.textContent = box.textContent ? `${box.textContent}; ${message}` : message;
    const input = field.querySelector("input, select, textarea");
    if (input) input.setAttribute("aria-invalid", "true");
    return true;
  }

  // The argument an error path names: /params/arguments/x/... -> x.
  function fieldOfPath(path, names) {
    const match = /^\/params\/arguments\/([^/]+)/.exec(path || "");
    if (match) return match[1].replace(/~1/g, "/").replace(/~0/g, "~");
    return null;
  }

  // Shows the mod's error next to the fields it names: -32602's data.errors [{path, message}], or a field
  // named in data.field. Returns how many it placed.
  function showErrors(form, error) {
    const data = error && error.data;
    const names = [...form.querySelectorAll(".field[data-field]")].map((f) => f.dataset.field).filter(Boolean);
    let placed = 0;
    const place = (name, message) => {
      if (name !== null && showFieldError(form, name, message)) placed++;
    };
    if (data && Array.isArray(data.errors)) {
      for (const item of data.errors) {
        let name = fieldOfPath(item.path, names);
        if (name === null) name = names.find((n) => new RegExp(`["'\`]${n}["'\`]`).test(item.message || "")) ?? null;
        place(name, item.message || error.message);
      }
    }
    if (data && typeof data.field === "string") place(data.field, error.message);
    return placed;
  }

  return { el, build, collect, showErrors, clearErrors };
})();
