// Leases (migrations/0014_leases.sql): a delivery in flight has a row in `leases`; the delivery row
// itself keeps its waiting status. This builds the SQL that tells the two apart, over a deliveries
// row of alias `x`.

/** The delivery is not in flight. */
export const UNLEASED = (x: string): string =>
  `NOT EXISTS (SELECT 1 FROM leases l_ WHERE l_.destination_id = ${x}.destination_id AND l_.delivery_id = ${x}.id)`;
