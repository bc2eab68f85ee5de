import { addressBudgetKey } from '../../../src/limits/address-key';

describe('addressBudgetKey: what a per-address budget counts an address under', () => {
  it('IPv4 as it is; IPv4-mapped IPv6 as its IPv4', () => {
    expect(addressBudgetKey('198.51.100.7')).toBe('198.51.100.7');
    expect(addressBudgetKey('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(addressBudgetKey('::FFFF:c633:6407')).toBe('198.51.100.7');
  });

  it('any other IPv6 address by its /64, whatever form it is written in', () => {
    const key = '2001:db8:1:2::/64';
    for (const a of ['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:0DB8:0001:0002:0:0:0:9', '2001:db8:1:2:a:b:c:d', '2001:db8:1:2::1%eth0']) {
      expect({ a, key: addressBudgetKey(a) }).toEqual({ a, key });
    }
    expect(addressBudgetKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressBudgetKey('::1')).toBe('::/64');
    expect(addressBudgetKey('fe80::1%eth0')).toBe('fe80::/64');
  });

  it('what is not an address is counted as it is', () => {
    expect(addressBudgetKey('')).toBe('');
    expect(addressBudgetKey('not:an:address')).toBe('not:an:address');
  });
});
