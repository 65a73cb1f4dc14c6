import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { parse as pgParse } from "pg-connection-string";
import { connectionTarget, describeHosts, HostRoleError, parsePostgresUrl } from "../../src/db/hosts.js";
import { describeServer, isStoreUnavailable, openDb } from "../../src/db/db.js";
import { loadConfig } from "../../src/config.js";
import { ConfigError } from "../../src/errors.js";

// libpq-style host lists in DATABASE_URL (src/db/hosts.ts): parsed without I/O.

const TIMEOUT = { connectTimeoutMs: 1000 };

test("one host: its port, or 5432; the URL is kept as the base", () => {
  const one = parsePostgresUrl("postgres://app:pw@db.internal:5433/sluice");
  assert.deepEqual(one.hosts, [{ host: "db.internal", port: 5433 }]);
  assert.equal(one.targetSessionAttrs, undefined);
  assert.equal(one.baseUrl, "postgres://app:pw@db.internal:5433/sluice");
  assert.deepEqual(parsePostgresUrl("postgresql://db/x").hosts, [{ host: "db", port: 5432 }]);
  assert.deepEqual(parsePostgresUrl("postgres://db:/x").hosts, [{ host: "db", port: 5432 }], "an empty port is the default too");
});

test("many hosts, in order, each with its own port or 5432", () => {
  const list = parsePostgresUrl("postgres://app@a:5432,b,c:6000,d:1,e:65535/sluice?target_session_attrs=read-write");
  assert.deepEqual(list.hosts, [
    { host: "a", port: 5432 },
    { host: "b", port: 5432 },
    { host: "c", port: 6000 },
    { host: "d", port: 1 },
    { host: "e", port: 65535 },
  ]);
  assert.equal(list.targetSessionAttrs, "read-write");
  // Every host gets the first one's user, database and parameters; target_session_attrs is Sluice's to apply.
  assert.equal(list.baseUrl, "postgres://app@a:5432/sluice");
});

test("IPv6 addresses in brackets, with and without a port", () => {
  const { hosts, baseUrl } = parsePostgresUrl("postgres://u@[::1]:5433,[fe80::1%25eth0],[2001:db8::2]:6543/d");
  assert.deepEqual(hosts, [
    { host: "::1", port: 5433 },
    { host: "fe80::1%eth0", port: 5432 },
    { host: "2001:db8::2", port: 6543 },
  ]);
  assert.equal(describeHosts(hosts), "[::1]:5433,[fe80::1%eth0]:5432,[2001:db8::2]:6543");
  assert.equal(pgParse(baseUrl).host, "::1", "node-postgres reads the base URL's bracketed host");
});

test("percent-encoding: the password reaches node-postgres as written, host names are decoded", () => {
  const { hosts, baseUrl } = parsePostgresUrl("postgres://app%2Fx:p%40ss%3Aw%2Fd%23@%2Fvar%2Frun%2Fpostgresql,db%2Db:5433/my%20db");
  assert.deepEqual(hosts, [
    { host: "/var/run/postgresql", port: 5432 },
    { host: "db-b", port: 5433 },
  ]);
  const parsed = pgParse(baseUrl);
  assert.equal(parsed.user, "app/x");
  assert.equal(parsed.password, "p@ss:w/d#");
  assert.equal(parsed.database, "my db");
});

test("other parameters are kept; target_session_attrs any, read-write and primary are taken", () => {
  for (const attrs of ["any", "read-write", "primary"] as const) {
    const p = parsePostgresUrl(`postgres://u@a,b/d?application_name=sluice&target_session_attrs=${attrs}&sslmode=disable`);
    assert.equal(p.targetSessionAttrs, attrs);
    assert.deepEqual(pgParse(p.baseUrl), pgParse("postgres://u@a/d?application_name=sluice&sslmode=disable"));
  }
  // One host with target_session_attrs: checked like a list of one.
  assert.equal(parsePostgresUrl("postgres://u@a/d?target_session_attrs=primary").targetSessionAttrs, "primary");
});

test("bad URLs say what is wrong without repeating the password", () => {
  const cases: [string, RegExp][] = [
    ["mysql://u:hunter2@a,b/d", /not a postgres:\/\/ or postgresql:\/\/ URL/],
    ["postgres://u:hunter2@a,,b/d", /host 2 of 3 is empty/],
    ["postgres://u:hunter2@a,b:0/d", /host 2 of 2: the port must be a number from 1 to 65535/],
    ["postgres://u:hunter2@a:65536,b/d", /host 1 of 2: the port/],
    ["postgres://u:hunter2@a:54x2,b/d", /host 1 of 2: the port/],
    ["postgres://u:hunter2@a,[::1/d", /host 2 of 2 is not host, host:port or \[IPv6 address\]:port/],
    ["postgres://u:hunter2@a,b%zz/d", /host 2 of 2 has a % that is not/],
    ["postgres://u:hunter2@a,b/d?target_session_attrs=read-only", /target_session_attrs=read-only is not one Sluice can use: it writes/],
    ["postgres://u:hunter2@a,b/d?target_session_attrs=standby", /any, read-write or primary/],
    ["postgres://u:hunter2@a b,c/d", /is not a URL/],
  ];
  for (const [url, message] of cases) {
    assert.throws(
      () => parsePostgresUrl(url),
      (err: Error) => {
        assert.match(err.message, message, url);
        assert.doesNotMatch(err.message, /hunter2/);
        return true;
      },
    );
  }
});

test("any list of hosts survives the trip through a URL", () => {
  const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}(\.[a-z0-9-]{1,10}){0,2}$/);
  const v6 = fc.ipV6();
  const host = fc.record({ host: fc.oneof(name, v6), port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }) });
  fc.assert(
    fc.property(fc.array(host, { minLength: 1, maxLength: 8 }), (hosts) => {
      const text = hosts.map((h) => `${h.host.includes(":") ? `[${h.host}]` : h.host}${h.port === undefined ? "" : `:${h.port}`}`);
      const p = parsePostgresUrl(`postgres://user:pa%2Fss@${text.join(",")}/db?target_session_attrs=read-write`);
      assert.deepEqual(
        p.hosts,
        hosts.map((h) => ({ host: h.host, port: h.port ?? 5432 })),
      );
      assert.equal(pgParse(p.baseUrl).password, "pa/ss");
    }),
  );
});

test("a URL with one host and no target_session_attrs goes to node-postgres unchanged, with its own Client", () => {
  for (const url of ["postgres://u:p@h:5433/d?sslmode=disable", "postgres://u@/d?host=/tmp", "postgresql://h/d"]) {
    assert.deepEqual(connectionTarget(url, TIMEOUT), { connectionString: url });
  }
  const list = connectionTarget("postgres://u@a:1,b:2/d", TIMEOUT);
  assert.equal(list.connectionString, "postgres://u@a:1/d");
  assert.equal(typeof list.Client, "function", "a host list picks its host per connection");
  assert.equal(typeof connectionTarget("postgres://u@a/d?target_session_attrs=read-write", TIMEOUT).Client, "function");
});

test("the store is named with every host, never the password", () => {
  assert.equal(
    describeServer("postgres://u:hunter2@a:5432,[::1]:5433/sluice?target_session_attrs=read-write"),
    "Postgres at a:5432,[::1]:5433/sluice",
  );
  assert.equal(describeServer("postgres://u:hunter2@db:5433/sluice"), "Postgres at db:5433/sluice");
  assert.equal(describeServer("postgres://u:hunter2@a,,b/sluice"), "the Postgres server named by DATABASE_URL");
});

test("a read-only host, and a list where no host suits, count as the store being away", () => {
  assert.ok(isStoreUnavailable({ code: "25006", message: "cannot execute INSERT in a read-only transaction" }));
  const role = new HostRoleError("b:5432", "is a standby");
  assert.ok(isStoreUnavailable(role));
  assert.ok(isStoreUnavailable(new AggregateError([Object.assign(new Error("refused"), { code: "ECONNREFUSED" }), role])));
  assert.ok(!isStoreUnavailable(new AggregateError([role, Object.assign(new Error("no such table"), { code: "42P01" })])));
});

test("DATABASE_URL takes a host list; a bad one is a settings problem when the store opens", async () => {
  const url = "postgres://u:hunter2@127.0.0.1:5432,127.0.0.1:5433/sluice?target_session_attrs=read-write";
  assert.equal(loadConfig({}, { DATABASE_URL: url }).databaseUrl, url);
  await assert.rejects(openDb({ databaseUrl: "postgres://u:hunter2@a:1,b:x/d" }), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /DATABASE_URL: host 2 of 2: the port must be a number/);
    assert.doesNotMatch(err.message, /hunter2/);
    return true;
  });
  await assert.rejects(
    openDb({ databaseUrl: "postgres://u@a/d", directUrl: "postgres://u@a,b/d?target_session_attrs=standby" }),
    /SLUICE_DIRECT_DATABASE_URL: target_session_attrs=standby/,
  );
});
