// Reading EXPLAIN (FORMAT JSON) plans in tests that prove how a statement reads its tables.

export interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

/** Every node of a plan (EXPLAIN's JSON), depth first. */
export const planNodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(planNodes)];

/** Rows a plan read from `table` or its indexes (named `table_…`), filtered ones included, over all loops. */
export const rowsRead = (plan: PlanNode, table: string): number =>
  planNodes(plan)
    .filter((n) => n["Node Type"].endsWith("Scan") && (n["Relation Name"] === table || n["Index Name"]?.startsWith(`${table}_`)))
    .reduce((sum, n) => sum + ((n["Actual Rows"] ?? 0) + (n["Rows Removed by Filter"] ?? 0)) * (n["Actual Loops"] ?? 1), 0);
