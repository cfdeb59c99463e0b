/**
 * US area codes (NANP NPAs) with their state and IANA time zones, for the number inventory and the
 * recipient-local quiet-hours window (spec "Limits": 8am to 9pm recipient-local). Where an area code
 * spans several time zones, every zone is listed so the quiet-hours check can take the overlap.
 * Source: NANPA area-code assignments by state and the federal time-zone boundaries (49 CFR part 71);
 * codes whose territory crosses a zone line are marked conservatively (both zones).
 */

const ET = 'America/New_York';
const CT = 'America/Chicago';
const MT = 'America/Denver';
const PT = 'America/Los_Angeles';
const AZ = 'America/Phoenix';

/** Area codes per state (and DC and the inhabited territories), with the state's main zone. */
const BY_STATE: [state: string, zone: string, codes: string][] = [
  ['AL', CT, '205 251 256 334 659 938'],
  ['AK', 'America/Anchorage', '907'],
  ['AZ', AZ, '480 520 602 623 928'],
  ['AR', CT, '327 479 501 870'],
  ['CA', PT, '209 213 279 310 323 341 350 369 408 415 424 442 510 530 559 562 619 626 628 650 657 661 669 707 714 738 747 760 805 818 820 840 858 909 916 925 949 951'],
  ['CO', MT, '303 719 720 970 983'],
  ['CT', ET, '203 475 860 959'],
  ['DE', ET, '302'],
  ['DC', ET, '202 771'],
  ['FL', ET, '239 305 321 324 352 386 407 448 561 645 656 689 727 728 754 772 786 813 850 863 904 941 954'],
  ['GA', ET, '229 404 470 478 678 706 762 770 912 943'],
  ['HI', 'Pacific/Honolulu', '808'],
  ['ID', MT, '208 986'],
  ['IL', CT, '217 224 309 312 331 447 464 618 630 708 730 773 779 815 847 861 872'],
  ['IN', ET, '219 260 317 463 574 765 812 930'],
  ['IA', CT, '319 515 563 641 712'],
  ['KS', CT, '316 620 785 913'],
  ['KY', ET, '270 364 502 606 859'],
  ['LA', CT, '225 318 337 504 985'],
  ['ME', ET, '207'],
  ['MD', ET, '227 240 301 410 443 667'],
  ['MA', ET, '339 351 413 508 617 774 781 857 978'],
  ['MI', ET, '231 248 269 313 517 586 616 679 734 810 906 947 989'],
  ['MN', CT, '218 320 507 612 651 763 952'],
  ['MS', CT, '228 601 662 769'],
  ['MO', CT, '235 314 417 557 573 636 660 816 975'],
  ['MT', MT, '406'],
  ['NE', CT, '308 402 531'],
  ['NV', PT, '702 725 775'],
  ['NH', ET, '603'],
  ['NJ', ET, '201 551 609 640 732 848 856 862 908 973'],
  ['NM', MT, '505 575'],
  ['NY', ET, '212 315 332 347 363 516 518 585 607 624 631 646 680 716 718 838 845 914 917 929 934'],
  ['NC', ET, '252 336 472 704 743 828 910 919 980 984'],
  ['ND', CT, '701'],
  ['OH', ET, '216 220 234 283 326 330 380 419 436 440 513 567 614 740 937'],
  ['OK', CT, '405 539 572 580 918'],
  ['OR', PT, '458 503 541 971'],
  ['PA', ET, '215 223 267 272 412 445 484 570 582 610 717 724 814 835 878'],
  ['RI', ET, '401'],
  ['SC', ET, '803 821 839 843 854 864'],
  ['SD', CT, '605'],
  ['TN', CT, '423 615 629 731 865 901 931'],
  ['TX', CT, '210 214 254 281 325 346 361 409 430 432 469 512 682 713 726 737 806 817 830 832 903 915 936 940 945 956 972 979'],
  ['UT', MT, '385 435 801'],
  ['VT', ET, '802'],
  ['VA', ET, '276 434 540 571 686 703 757 804 826 948'],
  ['WA', PT, '206 253 360 425 509 564'],
  ['WV', ET, '304 681'],
  ['WI', CT, '262 274 414 534 608 715 920'],
  ['WY', MT, '307'],
  ['PR', 'America/Puerto_Rico', '787 939'],
  ['VI', 'America/St_Thomas', '340'],
  ['GU', 'Pacific/Guam', '671'],
  ['MP', 'Pacific/Saipan', '670'],
  ['AS', 'Pacific/Pago_Pago', '684'],
];

/** Area codes whose territory crosses a time-zone line (all zones listed). */
const SPANNING: Record<string, string[]> = {
  '907': ['America/Anchorage', 'America/Adak'], // Aleutians west of 169°30′W
  '928': [AZ, MT], // Navajo Nation observes daylight time
  '850': [ET, CT], '448': [ET, CT], // Florida panhandle west of the Apalachicola
  '208': [MT, PT], '986': [MT, PT], // Idaho panhandle
  '219': [CT], // northwest Indiana (Chicago area)
  '574': [ET, CT], '812': [ET, CT], '930': [ET, CT], // Indiana: Starke and the southwest counties
  '620': [CT, MT], '785': [CT, MT], // western Kansas
  '270': [CT, ET], '364': [CT, ET], '606': [ET, CT], // Kentucky
  '906': [ET, CT], // Michigan's Upper Peninsula (four counties on Central)
  '308': [CT, MT], // western Nebraska
  '775': [PT, MT], // West Wendover, Nevada
  '701': [CT, MT], // southwestern North Dakota
  '458': [PT, MT], '541': [PT, MT], // Malheur County, Oregon
  '605': [CT, MT], // western South Dakota
  '423': [ET, CT], '931': [CT, ET], // Tennessee
  '615': [CT], '629': [CT], '731': [CT], '901': [CT], // Tennessee, Central
  '865': [ET], // Knoxville, Tennessee
  '432': [CT, MT], // west Texas (Culberson County)
  '915': [MT], // El Paso
};

/** One US area code. */
export interface AreaCodeInfo {
  areaCode: string;
  /** USPS code of the state, DC or territory. */
  state: string;
  /** IANA zones of the area code (more than one when it spans a zone line). */
  zones: string[];
}

const TABLE = new Map<string, AreaCodeInfo>();
for (const [state, zone, codes] of BY_STATE) {
  for (const code of codes.split(' ')) TABLE.set(code, { areaCode: code, state, zones: SPANNING[code] ?? [zone] });
}

/** Every zone a US number can be in (fallback for a non-geographic or unknown area code). */
export const ALL_US_ZONES: string[] = [...new Set([...TABLE.values()].flatMap((i) => i.zones))];

/** The area code's state and zones, or undefined when it is not a US geographic area code. */
export function areaCodeInfo(areaCode: string): AreaCodeInfo | undefined {
  return TABLE.get(areaCode);
}

/** The area code (NPA) of a +1 E.164 number, or undefined. */
export function areaCodeOf(e164: string): string | undefined {
  const m = /^\+1([2-9]\d{2})[2-9]\d{6}$/.exec(e164);
  return m?.[1];
}

/** Every US geographic area code, sorted. */
export function usAreaCodes(): string[] {
  return [...TABLE.keys()].sort();
}
