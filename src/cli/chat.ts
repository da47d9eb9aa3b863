/** Placeholder until the command lands; the owner replaces it. */
export async function main(_args: string[]): Promise<number> {
  process.stderr.write('not available yet\n');
  return 2;
}
