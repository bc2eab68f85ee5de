export async function runBenchmarks(_args: string[]): Promise<void> {
  throw new Error('not yet');
}
